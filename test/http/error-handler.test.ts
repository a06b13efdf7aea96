import { sql } from "drizzle-orm";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerErrorHandler } from "../../src/http/error-handler.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

/** The one error handler, fed real failures: a Postgres refusal and an unexpected fault. */
let testDb: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  testDb = await createTestDatabase();
  app = Fastify();
  registerErrorHandler(app, 1024);
  app.get("/nul", async () => testDb.database.db.execute(sql`select ${"a\u0000b"}::text`));
  app.get("/date", async () => testDb.database.db.execute(sql`select ${"2026-02-30"}::date`));
  app.get("/boom", async () => {
    throw new Error("secret internals: password=hunter2");
  });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await testDb.drop();
});

describe("error handler", () => {
  it.each(["/nul", "/date"])(
    "maps a Postgres data exception (%s) to 400 invalid_request",
    async (url) => {
      const res = await app.inject({ method: "GET", url });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ ok: false, error: "invalid_request" });
    },
  );

  it("answers an unexpected fault with 500 internal_error and no detail", async () => {
    const res = await app.inject({ method: "GET", url: "/boom" });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      ok: false,
      error: "internal_error",
      message: "Internal server error",
    });
    expect(res.body).not.toContain("hunter2");
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";

let t: TestApp;
let ws: Workspace;
let writer: string;
let reader: string;

beforeAll(async () => {
  t = await createTestApp({ BODY_LIMIT_BYTES: "2048" });
  ws = await importFixture(
    t.db,
    workspaceDocument("checks", {
      projects: [{ slug: "p", name: "P", status: "active", visibility: "org" }],
    }),
  );
  writer = await mintToken(t.db, ws, ["tasks:write"]);
  reader = await mintToken(t.db, ws, ["tasks:read"]);
});
afterAll(() => t.close());

describe("order of checks on a known route: 401, 403, 400, 404", () => {
  const badBody = { title: "x", nonsense: true };
  it("answers 401 before anything else", async () => {
    const res = await api(t.app, "POST", "/api/v1/projects/nowhere/tasks", { body: badBody });
    expect(res.status).toBe(401);
  });
  it("answers 403 before validating the body", async () => {
    const res = await api(t.app, "POST", "/api/v1/projects/nowhere/tasks", {
      token: reader,
      body: badBody,
    });
    expect(res.status).toBe(403);
  });
  it("answers 400 for the body before looking the project up", async () => {
    const res = await api(t.app, "POST", "/api/v1/projects/nowhere/tasks", {
      token: writer,
      body: badBody,
    });
    expect(res.status).toBe(400);
  });
  it("answers 404 for a valid body on an unknown project", async () => {
    const res = await api(t.app, "POST", "/api/v1/projects/nowhere/tasks", {
      token: writer,
      body: { title: "ok" },
    });
    expect(res.status).toBe(404);
  });
});

describe("bodies the API cannot take", () => {
  const url = "/api/v1/projects/p/tasks";
  it("refuses a body over BODY_LIMIT_BYTES with 400 saying it is too large", async () => {
    const payload = JSON.stringify({ title: "big", description: "x".repeat(3000) });
    const res = await api(t.app, "POST", url, {
      token: writer,
      payload,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ ok: false, error: "invalid_request" });
    expect(res.body.message).toMatch(/too large/);
  });
  it("refuses malformed JSON", async () => {
    const res = await api(t.app, "POST", url, {
      token: writer,
      payload: '{"title": ',
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/malformed JSON/);
  });
  it.each(["text/plain", "application/x-www-form-urlencoded"])(
    "refuses Content-Type %s",
    async (contentType) => {
      const res = await api(t.app, "POST", url, {
        token: writer,
        payload: "title=hello",
        headers: { "content-type": contentType },
      });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/Content-Type/);
    },
  );
  it("names a few of many failing fields, each name cut short, and counts the rest", async () => {
    const longName = "n".repeat(500);
    const body: Record<string, unknown> = { title: "ok", [longName]: 1 };
    for (let i = 0; i < 140; i++) body[`f${i}`] = 1;
    const res = await api(t.app, "POST", url, { token: writer, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    const listed = res.body.message.split("; ");
    expect(listed).toHaveLength(11);
    expect(listed[0]).toMatch(/^(n{100}…|f0): unknown field$/);
    expect(listed.at(-1)).toBe("and 131 more");
    expect(res.body.message.length).toBeLessThan(1000);
  });
  it("refuses a missing body naming it", async () => {
    const res = await api(t.app, "POST", url, { token: writer });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
  });
});

describe("paths that name nothing", () => {
  it("answer every unknown slug with one body, whatever its shape", async () => {
    const reader2 = await mintToken(t.db, ws, ["tasks:read"]);
    const bodies = new Set<string>();
    for (const slug of ["nope", "NOPE", "nope_x", "-x", "a%20b"]) {
      const res = await api(t.app, "GET", `/api/v1/projects/${slug}/tasks`, { token: reader2 });
      expect(res.status, slug).toBe(404);
      bodies.add(res.raw);
    }
    expect(bodies.size).toBe(1);
  });

  it("validate the body before answering 404 for an id or slug that cannot exist", async () => {
    const pagesWriter = await mintToken(t.db, ws, ["pages:write", "tasks:write"]);
    const badBody = await api(t.app, "PATCH", "/api/v1/pages/not-a-uuid", {
      token: pagesWriter,
      body: { title: 5 },
    });
    expect(badBody.status).toBe(400);
    const goodBody = await api(t.app, "PATCH", "/api/v1/pages/not-a-uuid", {
      token: pagesWriter,
      body: { title: "ok" },
    });
    expect(goodBody.status).toBe(404);
    expect(goodBody.body).toEqual({ ok: false, error: "not_found", message: "Not found" });
    expect(
      (await api(t.app, "POST", "/api/v1/projects/NOPE/tasks", { token: pagesWriter, body: {} }))
        .status,
    ).toBe(400);
    expect(
      (
        await api(t.app, "POST", "/api/v1/projects/NOPE/tasks", {
          token: pagesWriter,
          body: { title: "ok" },
        })
      ).status,
    ).toBe(404);
  });
});

describe("paths the API cannot route", () => {
  it("answers a slug that cannot be one with 404", async () => {
    const res = await api(t.app, "GET", "/api/v1/projects/%00/tasks", { token: reader });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("answers an undecodable path with the failure envelope", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/api/v1/projects/%ED%A0%80/tasks",
      headers: { authorization: `Bearer ${reader}` },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      ok: false,
      error: "invalid_request",
      message: "The request URL is malformed",
    });
    expect(res.headers["x-request-id"]).toEqual(expect.any(String));
  });
});

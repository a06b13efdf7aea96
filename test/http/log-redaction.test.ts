import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { createTestApp, type TestApp } from "../support/app.js";

let t: TestApp;
let app: Awaited<ReturnType<typeof buildApp>>;
let logged = "";

beforeAll(async () => {
  t = await createTestApp();
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  app = await buildApp({
    config: t.config,
    database: t.database,
    logger: pino({ level: "trace" }, sink),
    queue: t.app.queue,
  });
});
afterAll(async () => {
  await app.close();
  await t.close();
});

it("never writes secret-looking query parameters to the log, at any level", async () => {
  const secrets = [
    "s3cr3t-client",
    "s3cr3t-code",
    "s3cr3t-verifier",
    "s3cr3t-token",
    "s3cr3t-access",
  ];
  const query = `client_secret=${secrets[0]}&code=${secrets[1]}&code_verifier=${secrets[2]}&token=${secrets[3]}&Access_Token=${secrets[4]}&state=visible`;
  for (const url of [
    `/api/v1/oauth/token?${query}`,
    `/oauth/authorize?${query}`,
    `/api/v1/projects?${query}`,
    `/no-such-page?${query}`,
  ]) {
    await app.inject({ method: url.includes("token") ? "POST" : "GET", url });
  }
  expect(logged).toContain("state=visible");
  for (const secret of secrets) expect(logged).not.toContain(secret);
});

it("redacts secret parameters whose names are percent-encoded, in any case", async () => {
  const names = [
    "client%5Fsecret",
    "code%5Fverifier",
    "access%5Ftoken",
    "%63ode",
    "%54%4F%4B%45%4E",
    "Client%5fSecret",
    "access%255Ftoken",
  ];
  const query = names.map((name, index) => `${name}=enc0ded-${index}`).join("&");
  for (const url of [`/api/v1/oauth/token?${query}`, `/oauth/authorize?${query}&state=shown`]) {
    await app.inject({ method: url.includes("token") ? "POST" : "GET", url });
  }
  expect(logged).toContain("state=shown");
  expect(logged).toContain("client%5Fsecret=[redacted]");
  for (const index of names.keys()) expect(logged).not.toContain(`enc0ded-${index}`);
});

it("answers an unknown page with a 404 page that does not echo its address", async () => {
  const res = await app.inject({ method: "GET", url: "/no-such-page?client_secret=s3cr3t" });
  expect(res.statusCode).toBe(404);
  expect(res.headers["content-type"]).toMatch(/^text\/html/);
  expect(res.body).not.toContain("s3cr3t");
});

it("writes one line per answered request, under the id the response carries", async () => {
  const res = await app.inject({
    method: "GET",
    url: "/healthz",
    headers: { "x-request-id": "trace-log-line-1" },
  });
  expect(res.headers["x-request-id"]).toBe("trace-log-line-1");
  const lines = logged
    .split("\n")
    .filter((line) => line.includes("trace-log-line-1"))
    .map((line) => JSON.parse(line));
  expect(lines).toEqual([
    expect.objectContaining({
      reqId: "trace-log-line-1",
      method: "GET",
      url: "/healthz",
      statusCode: 200,
      responseTime: expect.any(Number),
      msg: "request completed",
    }),
  ]);
});

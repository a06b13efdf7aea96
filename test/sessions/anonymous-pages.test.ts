import { afterAll, beforeAll, expect, it } from "vitest";
import { sessions } from "../../src/db/schema/index.js";
import { createTestApp, type TestApp } from "../support/app.js";

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ PAGE_RATE_LIMIT_MAX: "60" });
});
afterAll(() => t.close());

const AUTHORIZE = "/oauth/authorize?response_type=code&client_id=svcc_unknown&state=s";

it("stores no session for anonymous visitors, and limits pages per address", async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 70; i += 1) {
    const res = await t.app.inject({
      method: "GET",
      url: i % 2 === 0 ? "/login" : AUTHORIZE,
      remoteAddress: "198.51.100.20",
    });
    statuses.push(res.statusCode);
    if (i === 0) {
      // The sign-in form still carries a CSRF token, its secret in a signed cookie.
      expect(res.body).toMatch(/name="_csrf" value="[^"]+"/);
      expect(String(res.headers["set-cookie"])).toMatch(/^svc_csrf=/);
    }
  }
  expect(await t.db.$count(sessions)).toBe(0);
  expect(statuses.slice(0, 60).every((status) => status !== 429)).toBe(true);
  expect(statuses.slice(60)).toEqual(Array(10).fill(429));
  // Another address has a budget of its own.
  const elsewhere = await t.app.inject({
    method: "GET",
    url: "/login",
    remoteAddress: "198.51.100.21",
  });
  expect(elsewhere.statusCode).toBe(200);
});

it("answers a page past the budget with a page saying when to come back", async () => {
  const res = await t.app.inject({ method: "GET", url: "/login", remoteAddress: "198.51.100.20" });
  expect(res.statusCode).toBe(429);
  expect(res.headers["content-type"]).toMatch(/^text\/html/);
  expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
  expect(res.body).toContain("Too many requests");
});

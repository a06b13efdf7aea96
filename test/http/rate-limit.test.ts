import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { api } from "../support/api.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { TEST_REDIS_URL } from "../support/env.js";
import {
  importFixture,
  mintToken,
  type Workspace,
  workspaceDocument,
} from "../support/fixtures.js";

let redis: Redis;
let t: TestApp;
let ws: Workspace;
/** Queries that read the token table, since the app was built. */
const tokenQueries: string[] = [];

beforeAll(async () => {
  redis = new Redis(TEST_REDIS_URL, { keyPrefix: `rl-test-${randomBytes(4).toString("hex")}:` });
  t = await createTestApp(
    { RATE_LIMIT_MAX: "3", RATE_LIMIT_WINDOW_SECONDS: "60" },
    {
      redis,
      onQuery: (query) => {
        if (query.includes('from "api_tokens"')) tokenQueries.push(query);
      },
    },
  );
  ws = await importFixture(t.db, workspaceDocument("limits"));
});
afterAll(async () => {
  await t.close();
  redis.disconnect();
});

describe("per-token rate limit", () => {
  it("answers 429 rate_limited with Retry-After once the token spent its budget", async () => {
    const token = await mintToken(t.db, ws);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1)
      statuses.push((await api(t.app, "GET", "/api/v1/me", { token })).status);
    expect(statuses).toEqual([200, 200, 200]);
    const limited = await api(t.app, "GET", "/api/v1/me", { token });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ ok: false, error: "rate_limited" });
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(limited.headers["ratelimit-remaining"]).toBe("0");
  });

  it("gives every token its own budget", async () => {
    const first = await mintToken(t.db, ws);
    const second = await mintToken(t.db, ws);
    for (let i = 0; i < 3; i += 1) await api(t.app, "GET", "/api/v1/me", { token: first });
    expect((await api(t.app, "GET", "/api/v1/me", { token: first })).status).toBe(429);
    expect((await api(t.app, "GET", "/api/v1/me", { token: second })).status).toBe(200);
  });

  it("charges requests without a live token to their address, however many tokens they invent", async () => {
    const invent = () => `svc_live_${randomBytes(32).toString("base64url")}`;
    const from = (address: string, token?: string) =>
      t.app.inject({
        method: "GET",
        url: "/api/v1/me",
        remoteAddress: address,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      });
    const statuses = [];
    for (const token of [invent(), invent(), "not-a-token", invent()]) {
      statuses.push((await from("10.7.0.1", token)).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await from("10.7.0.1")).statusCode).toBe(429);
    expect((await from("10.7.0.2", invent())).statusCode).toBe(401);
    // A live token from the same address keeps its own budget, once this process has seen it.
    const live = await mintToken(t.db, ws);
    expect((await from("10.7.0.3", live)).statusCode).toBe(200);
    expect((await from("10.7.0.1", live)).statusCode).toBe(200);
  });

  it("refuses invented tokens from an address past its budget without looking them up", async () => {
    const invent = () => `svc_live_${randomBytes(32).toString("base64url")}`;
    const from = (address: string) =>
      t.app.inject({
        method: "GET",
        url: "/api/v1/me",
        remoteAddress: address,
        headers: { authorization: `Bearer ${invent()}` },
      });
    const spending = [];
    for (let i = 0; i < 4; i += 1) spending.push((await from("2001:db8:7:1::1")).statusCode);
    expect(spending).toEqual([401, 401, 401, 429]);
    const queriesBefore = tokenQueries.length;
    // The same /64 shares the budget, whichever address of it the request comes from.
    const refused = [];
    for (let i = 0; i < 20; i += 1) refused.push((await from(`2001:db8:7:1::${i + 2}`)).statusCode);
    expect(refused).toEqual(Array(20).fill(429));
    expect(tokenQueries.length).toBe(queriesBefore);
    // Another /64 still gets its lookups and its own budget.
    expect((await from("2001:db8:7:2::1")).statusCode).toBe(401);
    expect(tokenQueries.length).toBe(queriesBefore + 1);
  });

  it("shares one budget between instances through Redis", async () => {
    const other = await buildApp({
      config: t.config,
      database: t.database,
      logger: pino({ level: "silent" }),
      redis,
      queue: t.app.queue,
    });
    await other.ready();
    try {
      const token = await mintToken(t.db, ws);
      await api(t.app, "GET", "/api/v1/me", { token });
      await api(other, "GET", "/api/v1/me", { token });
      await api(t.app, "GET", "/api/v1/me", { token });
      expect((await api(other, "GET", "/api/v1/me", { token })).status).toBe(429);
    } finally {
      await other.close();
    }
  });

  it("keeps the budgets of deployments with different QUEUE_PREFIX apart on one Redis", async () => {
    const otherDeployment = await buildApp({
      config: { ...t.config, queuePrefix: `${t.config.queuePrefix}-other` },
      database: t.database,
      logger: pino({ level: "silent" }),
      redis,
      queue: t.app.queue,
    });
    await otherDeployment.ready();
    try {
      // Token ids are unique, so only a request refused by its address could meet the other's.
      const statuses = async (app: typeof otherDeployment) => {
        const answers = [];
        for (let i = 0; i < 4; i += 1) {
          answers.push(
            (await app.inject({ method: "GET", url: "/api/v1/me", remoteAddress: "10.9.0.1" }))
              .statusCode,
          );
        }
        return answers;
      };
      expect(await statuses(t.app)).toEqual([401, 401, 401, 429]);
      expect(await statuses(otherDeployment)).toEqual([401, 401, 401, 429]);
    } finally {
      await otherDeployment.close();
    }
  });

  it("counts requests that arrive together one by one, each in its own token's budget", async () => {
    const [token, other] = await Promise.all([mintToken(t.db, ws), mintToken(t.db, ws)]);
    // Each principal is cached by its token's first request: the burst's come back together.
    for (const warm of [token, other]) {
      expect((await api(t.app, "GET", "/api/v1/me", { token: warm })).status).toBe(200);
    }
    const burst = await Promise.all(
      [token, token, token, token, other].map((each) =>
        api(t.app, "GET", "/api/v1/me", { token: each }),
      ),
    );
    const own = burst.slice(0, 4);
    expect(own.map((answer) => answer.status).toSorted()).toEqual([200, 200, 429, 429]);
    const remaining = own
      .filter((answer) => answer.status === 200)
      .map((answer) => answer.headers["ratelimit-remaining"]);
    expect(remaining.toSorted()).toEqual(["0", "1"]);
    expect(burst[4]?.status).toBe(200);
    expect(burst[4]?.headers["ratelimit-remaining"]).toBe("1");
  });

  it("keeps a budget per process while Redis cannot answer, and serves on", async () => {
    // Nothing listens on port 1: every Redis command fails at once, as during an outage.
    const deadRedis = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
    });
    deadRedis.on("error", () => {});
    const instance = () =>
      buildApp({
        config: t.config,
        database: t.database,
        logger: pino({ level: "silent" }),
        redis: deadRedis,
        queue: t.app.queue,
      });
    const [first, second] = [await instance(), await instance()];
    try {
      const token = await mintToken(t.db, ws);
      const statusesOn = async (app: typeof first) => {
        const statuses = [];
        for (let i = 0; i < 4; i++)
          statuses.push((await api(app, "GET", "/api/v1/me", { token })).status);
        return statuses;
      };
      expect(await statusesOn(first)).toEqual([200, 200, 200, 429]);
      // Each process counts on its own until Redis is back.
      expect(await statusesOn(second)).toEqual([200, 200, 200, 429]);
    } finally {
      await Promise.all([first, second].map((app) => app.close()));
      deadRedis.disconnect();
    }
  });
});

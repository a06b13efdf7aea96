import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { TEST_SECRET_KEY } from "../support/app.js";

const base = { SECRET_KEY: TEST_SECRET_KEY, DATABASE_URL: "postgres://127.0.0.1/unused" };

describe("the webhook quick-retry ladder", () => {
  it("defaults to 1 min, 10 min, 1 h", () => {
    expect(loadConfig(base).webhooks.quickRetrySeconds).toEqual([60, 600, 3600]);
  });

  it("is turned off by an empty WEBHOOK_QUICK_RETRIES", () => {
    expect(loadConfig({ ...base, WEBHOOK_QUICK_RETRIES: "" }).webhooks.quickRetrySeconds).toEqual(
      [],
    );
  });

  it("still treats other empty variables as unset", () => {
    expect(loadConfig({ ...base, PORT: "" }).port).toBe(3000);
  });
});

describe("TRUST_PROXY", () => {
  it("trusts no proxy by default, and the proxies' addresses when set", () => {
    expect(loadConfig(base).trustProxy).toBe(false);
    expect(loadConfig({ ...base, TRUST_PROXY: "10.0.0.1,10.1.0.0/16" }).trustProxy).toBe(
      "10.0.0.1,10.1.0.0/16",
    );
  });

  it("refuses to trust every hop, or a bare hop count Fastify would ignore", () => {
    expect(() => loadConfig({ ...base, TRUST_PROXY: "true" })).toThrow(/TRUST_PROXY/);
    expect(() => loadConfig({ ...base, TRUST_PROXY: "1" })).toThrow(/TRUST_PROXY/);
  });
});

describe("WEBHOOK_RETRY_CRON", () => {
  it("takes a cron pattern", () => {
    expect(loadConfig({ ...base, WEBHOOK_RETRY_CRON: "30 2 * * 1-5" }).webhooks.retryCron).toBe(
      "30 2 * * 1-5",
    );
  });

  it.each(["not a cron", "61 * * * *", "* * * * * * *"])(
    "refuses %j at start, naming the variable",
    (pattern) => {
      expect(() => loadConfig({ ...base, WEBHOOK_RETRY_CRON: pattern })).toThrow(
        /WEBHOOK_RETRY_CRON/,
      );
    },
  );
});

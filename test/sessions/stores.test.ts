import { sql } from "drizzle-orm";
import type { Session } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFailures, sessions } from "../../src/db/schema/index.js";
import { AuthFailureLimiter } from "../../src/modules/auth-failures/limiter.js";
import { hashSecret } from "../../src/modules/tokens/service.js";
import { DatabaseSessionStore } from "../../src/sessions/session-store.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { eventually } from "../support/eventually.js";
import { gate } from "../support/gate.js";

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase();
});
afterAll(() => testDb.drop());

function call<T>(
  action: (callback: (error?: unknown, value?: T) => void) => void,
): Promise<T | undefined> {
  return new Promise((resolve, reject) =>
    action((error, value) => (error ? reject(error) : resolve(value))),
  );
}

describe("the session store", () => {
  it("stores, reads and destroys sessions by the hash of their id, and ignores expired ones", async () => {
    const db = testDb.database.db;
    const store = new DatabaseSessionStore(db, 60_000);
    const expires = new Date(Date.now() + 60_000);
    const session = {
      userId: "u1",
      cookie: { originalMaxAge: 60_000, expires },
    } as unknown as Session;
    await call<void>((done) => store.set("plain-id", session, done));
    const [row] = await db.select().from(sessions);
    expect(row?.id).toBe(hashSecret("plain-id"));
    expect(row?.expiresAt.getTime()).toBe(expires.getTime());
    expect(await call<Session | null>((done) => store.get("plain-id", done))).toMatchObject({
      userId: "u1",
    });

    await db.update(sessions).set({ expiresAt: sql`now() - interval '1 second'` });
    expect(await call<Session | null>((done) => store.get("plain-id", done))).toBeNull();

    await db.update(sessions).set({ expiresAt: sql`now() + interval '1 hour'` });
    await call<void>((done) => store.destroy("plain-id", done));
    expect(await db.$count(sessions)).toBe(0);
  });

  it("purges expired rows lazily, on a later write", async () => {
    const db = testDb.database.db;
    await db
      .insert(sessions)
      .values({ id: "stale", data: {}, expiresAt: new Date(Date.now() - 1000) });
    const store = new DatabaseSessionStore(db, 60_000);
    await call<void>((done) => store.set("fresh", { cookie: {} } as unknown as Session, done));
    const ids = (await db.select({ id: sessions.id }).from(sessions)).map((row) => row.id);
    expect(ids).toEqual([hashSecret("fresh")]);
  });
});

describe("the failed-authentication counter", () => {
  const fail = async () => ({ failed: true, value: "wrong" });
  const succeed = async () => ({ failed: false, value: "right" });

  it("counts failures per key within 15 minutes and says when a key frees up", async () => {
    const db = testDb.database.db;
    const limiter = new AuthFailureLimiter(db, 2);
    expect(await limiter.guard(["k:a"], fail)).toEqual({ limited: false, value: "wrong" });
    expect(await limiter.guard(["k:a"], fail)).toEqual({ limited: false, value: "wrong" });
    let ran = false;
    const limited = await limiter.guard(["k:b", "k:a"], async () => {
      ran = true;
      return { failed: false, value: "right" };
    });
    expect(ran).toBe(false);
    expect(limited.limited).toBe(true);
    expect(limited.limited && limited.retryAfterSeconds).toBeGreaterThan(890);
    expect(await limiter.guard(["k:b"], succeed)).toEqual({ limited: false, value: "right" });

    // Failures older than the window no longer count (and are purged by a later attempt).
    await db.update(authFailures).set({ occurredAt: sql`now() - interval '16 minutes'` });
    expect(await limiter.guard(["k:a"], succeed)).toEqual({ limited: false, value: "right" });
    await new AuthFailureLimiter(db, 2).guard(["k:c"], fail);
    expect(
      (await db.select({ key: authFailures.key }).from(authFailures)).map((row) => row.key),
    ).toEqual(["k:c"]);
  });

  it("forgets successes and faults: only failures use up the allowance", async () => {
    const db = testDb.database.db;
    const limiter = new AuthFailureLimiter(db, 1);
    for (let i = 0; i < 3; i++) {
      expect(await limiter.guard(["k:ok"], succeed)).toEqual({ limited: false, value: "right" });
      await expect(
        limiter.guard(["k:ok"], async () => {
          throw new Error("database went away");
        }),
      ).rejects.toThrow("database went away");
    }
    expect(await db.$count(authFailures, sql`${authFailures.key} = 'k:ok'`)).toBe(0);
  });

  it("lets no more than the allowance through when attempts arrive in parallel", async () => {
    const db = testDb.database.db;
    const limiter = new AuthFailureLimiter(db, 5);
    // Every admitted attempt is held until the test lets go, so the attempts overlap by
    // construction, however fast the machine.
    const release = gate();
    let verified = 0;
    const heldFailure = async () => {
      verified++;
      await release.opened;
      return { failed: true, value: "wrong" };
    };
    const attempts = Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        limiter.guard([`k:parallel-address-${i % 3}`, "k:parallel-account"], heldFailure),
      ),
    );
    await eventually(() => verified === 5);
    release.open();
    expect((await attempts).filter((attempt) => !attempt.limited)).toHaveLength(5);
    expect(verified).toBe(5);
    expect(await db.$count(authFailures, sql`${authFailures.key} = 'k:parallel-account'`)).toBe(5);
  });

  it("lets parallel successes all through, never more in flight than the allowance", async () => {
    const limiter = new AuthFailureLimiter(testDb.database.db, 2);
    const release = gate();
    let inFlight = 0;
    let mostInFlight = 0;
    const heldSuccess = async () => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      await release.opened;
      inFlight--;
      return { failed: false, value: "right" };
    };
    const attempts = Promise.all(
      Array.from({ length: 10 }, () => limiter.guard(["k:busy-account"], heldSuccess)),
    );
    await eventually(() => inFlight === 2);
    release.open();
    expect(await attempts).toEqual(Array(10).fill({ limited: false, value: "right" }));
    expect(mostInFlight).toBe(2);
  });

  it("counts an attempt abandoned in flight (a crash) as a failure", async () => {
    const db = testDb.database.db;
    await db.insert(authFailures).values({
      key: "k:crashed",
      unsettled: true,
      occurredAt: sql`now() - interval '2 minutes'`,
    });
    const limited = await new AuthFailureLimiter(db, 1).guard(["k:crashed"], succeed);
    expect(limited.limited).toBe(true);
  });
});

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessions } from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { hashSecret } from "../../src/modules/tokens/service.js";
import { addUser, removeMember } from "../../src/modules/users/service.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { importFixture, workspaceDocument } from "../support/fixtures.js";

const PASSWORD = "correct horse battery";

async function importMembers(t: TestApp, slug: string) {
  await importFixture(
    t.db,
    workspaceDocument(slug, {
      users: [
        { email: `admin@${slug}.example`, name: "Ada Admin", role: "admin", password: PASSWORD },
        { email: `member@${slug}.example`, name: "Max Member", role: "member", password: PASSWORD },
        { email: `other@${slug}.example`, name: "Oda Other", role: "member", password: PASSWORD },
      ],
    }),
  );
}

function setCookieOf(headers: Record<string, unknown>): string {
  const value = headers["set-cookie"];
  return Array.isArray(value) ? value.join("\n") : String(value ?? "");
}

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
  await importMembers(t, "acme");
});
afterAll(() => t.close());

describe("the sign-in page", () => {
  it("is a small accessible form with a CSRF token and the page security headers", async () => {
    const res = await t.app.inject({ method: "GET", url: "/login" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain('<html lang="en">');
    expect(res.body).toContain("<main");
    expect(res.body).toMatch(/<label for="email">Email<\/label>/);
    expect(res.body).toMatch(/<label for="password">Password<\/label>/);
    expect(res.body).toMatch(/<button type="submit">Sign in<\/button>/);
    expect(res.body).toMatch(/name="_csrf" value="[^"]+"/);
    expect(res.body).not.toContain("<script");
    expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.headers["referrer-policy"]).toBe("no-referrer");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["cache-control"]).toBe("no-store");
    const cookie = setCookieOf(res.headers);
    // The form's CSRF secret, in a signed cookie: no session until there is one to keep.
    expect(cookie).toMatch(/^svc_csrf=/);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(cookie).toContain("Path=/");
    expect(cookie).not.toContain("Secure");
  });

  it("serves its stylesheet", async () => {
    const res = await t.app.inject({ method: "GET", url: "/assets/site.css" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/css/);
  });

  it("serves a favicon that browsers may keep, under the pages' security headers", async () => {
    const res = await t.app.inject({ method: "GET", url: "/favicon.ico" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("image/x-icon");
    expect(res.headers["cache-control"]).toBe("public, max-age=604800");
    expect(res.headers["content-security-policy"]).toContain("default-src 'none'");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    // An ICO header (reserved 0, type 1) holding one image.
    expect([...res.rawPayload.subarray(0, 6)]).toEqual([0, 0, 1, 0, 1, 0]);
  });
});

describe("signing in", () => {
  it("refuses a form without its CSRF token", async () => {
    const session = new InjectSession(t.app);
    await session.get("/login");
    const res = await session.post("/login", { email: "admin@acme.example", password: PASSWORD });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("Form not accepted");
    expect(res.headers.location).toBeUndefined();
  });

  it("refuses a wrong password and an unknown email with the same answer", async () => {
    for (const email of ["admin@acme.example", "nobody@acme.example"]) {
      const session = new InjectSession(t.app, "10.0.0.1");
      const _csrf = await session.csrfTokenOf("/login");
      const res = await session.post("/login", { _csrf, email, password: "wrong password" });
      expect(res.statusCode).toBe(401);
      expect(res.body).toContain("The email or password is incorrect.");
      expect(res.body).toContain(`value="${email}"`);
    }
  });

  it("refuses a NUL character in the email with a 400 page, not a server error", async () => {
    const session = new InjectSession(t.app, "10.0.0.2");
    const _csrf = await session.csrfTokenOf("/login");
    const res = await session.post("/login", {
      _csrf,
      email: "ada\u0000@acme.example",
      password: "x",
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toContain("text/html");
  });

  it("regenerates the session on sign-in, so an id planted before is worth nothing", async () => {
    const session = new InjectSession(t.app);
    const _csrf = await session.csrfTokenOf("/login");
    const before = session.cookies.get("svc_session");
    const res = await session.post("/login", {
      _csrf,
      email: "ADMIN@acme.example",
      password: PASSWORD,
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/admin");
    const after = session.cookies.get("svc_session");
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect((await session.get("/admin")).headers.location).toBe("/admin/acme");

    const planted = await t.app.inject({
      method: "GET",
      url: "/admin",
      headers: { cookie: `svc_session=${before}` },
    });
    expect(planted.statusCode).toBe(303);
    expect(planted.headers.location).toBe("/login?return_to=%2Fadmin");
  });

  it("keeps only the session id's hash in the database", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const signed = decodeURIComponent(session.cookies.get("svc_session") as string);
    const id = signed.slice(0, signed.lastIndexOf("."));
    const rows = await t.db.select({ id: sessions.id }).from(sessions);
    expect(rows.map((row) => row.id)).toContain(hashSecret(id));
    expect(rows.map((row) => row.id)).not.toContain(id);
  });

  it("goes back to a same-site return address, and to /admin for anything else", async () => {
    for (const [returnTo, expected] of [
      [
        "/oauth/authorize?client_id=svcc_x&state=a%20b",
        "/oauth/authorize?client_id=svcc_x&state=a%20b",
      ],
      ["//evil.example/steal", "/admin"],
      ["https://evil.example/", "/admin"],
      ["/\\evil.example", "/admin"],
    ]) {
      const session = new InjectSession(t.app);
      const _csrf = await session.csrfTokenOf(
        `/login?return_to=${encodeURIComponent(returnTo as string)}`,
      );
      const res = await session.post("/login", {
        _csrf,
        email: "admin@acme.example",
        password: PASSWORD,
        return_to: returnTo as string,
      });
      expect(res.headers.location, returnTo).toBe(expected);
    }
  });

  it("signs out with a POST, and the old session stops working", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    const cookie = session.cookies.get("svc_session");
    const page = await session.get("/admin/acme");
    expect(page.body).toContain(">Sign out</button>");
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const res = await session.post("/logout", { _csrf });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/login");
    expect(setCookieOf(res.headers)).toMatch(/svc_session=;/);
    const replay = await t.app.inject({
      method: "GET",
      url: "/admin/acme",
      headers: { cookie: `svc_session=${cookie}` },
    });
    expect(replay.statusCode).toBe(303);
  });

  it("treats an expired session as signed out", async () => {
    const session = new InjectSession(t.app);
    await session.signIn("admin@acme.example", PASSWORD);
    await t.db.update(sessions).set({ expiresAt: sql`now() - interval '1 second'` });
    const res = await session.get("/admin/acme");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/login?return_to=%2Fadmin%2Facme");
  });
});

describe("the failed sign-in limit (AUTH_RATE_LIMIT_MAX)", () => {
  let limited: TestApp;

  beforeAll(async () => {
    // The per-account caps are tested on their own (account-caps.test.ts).
    limited = await createTestApp({
      AUTH_RATE_LIMIT_MAX: "3",
      SIGN_IN_ACCOUNT_CONCURRENCY: "20",
      SIGN_IN_ACCOUNT_PER_MINUTE: "100",
    });
    await importMembers(limited, "lim");
  });
  afterAll(() => limited.close());

  async function attempt(email: string, password: string, address: string) {
    const session = new InjectSession(limited.app, address);
    const _csrf = await session.csrfTokenOf("/login");
    return session.post("/login", { _csrf, email, password });
  }

  it("does not count successes", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await attempt("admin@lim.example", PASSWORD, "10.1.0.1")).statusCode).toBe(303);
    }
  });

  it("does not count successes sent in parallel either", async () => {
    const forms = [];
    for (let i = 0; i < 8; i++) {
      const session = new InjectSession(limited.app, "10.1.0.2");
      forms.push({ session, _csrf: await session.csrfTokenOf("/login") });
    }
    const answers = await Promise.all(
      forms.map(({ session, _csrf }) =>
        session.post("/login", { _csrf, email: "other@lim.example", password: PASSWORD }),
      ),
    );
    expect(answers.map((res) => res.statusCode)).toEqual(Array(8).fill(303));
  });

  it("slows an account guessed from many addresses, but never refuses its right password", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await attempt("member@lim.example", "wrong", `10.2.0.${i + 1}`)).statusCode).toBe(
        401,
      );
    }
    expect((await attempt("member@lim.example", PASSWORD, "10.2.0.99")).statusCode).toBe(303);
  });

  it("refuses an address that used up its guesses on one account, even with the right password", async () => {
    for (let i = 0; i < 3; i++) {
      expect((await attempt("b@lim.example", "wrong", "10.2.1.1")).statusCode).toBe(401);
    }
    const refused = await attempt("b@lim.example", PASSWORD, "10.2.1.1");
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(refused.body).toContain("Too many failed sign-ins");
    expect(refused.headers.location).toBeUndefined();
  });

  it("refuses an address after its failures, whichever account it tries", async () => {
    for (const email of ["a@lim.example", "b@lim.example", "c@lim.example"]) {
      expect((await attempt(email, "wrong", "10.3.0.1")).statusCode).toBe(401);
    }
    expect((await attempt("other@lim.example", PASSWORD, "10.3.0.1")).statusCode).toBe(429);
    // The same account from another address is fine: its own count is clean.
    expect((await attempt("other@lim.example", PASSWORD, "10.3.0.2")).statusCode).toBe(303);
  });

  it("lets no more guesses through than the allowance when they arrive in parallel", async () => {
    const forms = [];
    for (let i = 0; i < 12; i++) {
      const session = new InjectSession(limited.app, "10.4.0.1");
      forms.push({ session, _csrf: await session.csrfTokenOf("/login") });
    }
    const answers = await Promise.all(
      forms.map(({ session, _csrf }) =>
        session.post("/login", { _csrf, email: "admin@lim.example", password: "wrong" }),
      ),
    );
    const statuses = answers.map((res) => res.statusCode).sort();
    expect(statuses).toEqual([...Array(3).fill(401), ...Array(9).fill(429)]);
    expect((await attempt("admin@lim.example", PASSWORD, "10.4.0.1")).statusCode).toBe(429);
  });
});

describe("a session that should end", () => {
  async function signedIn(email: string) {
    const session = new InjectSession(t.app);
    await session.signIn(email, PASSWORD);
    expect(await isSignedOut(session)).toBe(false);
    return session;
  }
  const isSignedOut = async (session: InjectSession) =>
    (await session.get("/admin")).headers.location?.toString().startsWith("/login") === true;

  it("ends after SESSION_IDLE_TIMEOUT_MINUTES without a request", async () => {
    const session = await signedIn("admin@acme.example");
    // Thirty-one minutes pass without a request (the default idle timeout is 30).
    await t.db
      .update(sessions)
      .set({
        data: sql`jsonb_set(${sessions.data}, '{lastSeenAt}', to_jsonb((extract(epoch from now()) * 1000 - 31 * 60000)::bigint))`,
      })
      .where(sql`${sessions.data}->>'userId' is not null`);
    expect(await isSignedOut(session)).toBe(true);
  });

  it("ends everywhere when the member's password changes", async () => {
    const first = await signedIn("other@acme.example");
    const second = await signedIn("other@acme.example");
    await addUser(t.db, systemAudit, {
      orgSlug: "acme",
      email: "other@acme.example",
      name: "Oda Other",
      role: "member",
      password: "a brand new passphrase",
    });
    expect(await isSignedOut(first)).toBe(true);
    expect(await isSignedOut(second)).toBe(true);
  });

  it("ends when the membership is removed", async () => {
    const session = await signedIn("member@acme.example");
    await removeMember(t.db, systemAudit, { orgSlug: "acme", email: "member@acme.example" });
    expect(await isSignedOut(session)).toBe(true);
  });
});

describe("with an https PUBLIC_URL, whatever NODE_ENV says", () => {
  let httpsOutsideProduction: TestApp;

  beforeAll(async () => {
    httpsOutsideProduction = await createTestApp({
      PUBLIC_URL: "https://workspace.example",
      TRUST_PROXY: "127.0.0.1",
    });
  });
  afterAll(() => httpsOutsideProduction.close());

  it("sends a Secure __Host- cookie and HSTS", async () => {
    const res = await httpsOutsideProduction.app.inject({
      method: "GET",
      url: "/login",
      headers: { "x-forwarded-proto": "https" },
    });
    const cookie = setCookieOf(res.headers);
    expect(cookie).toMatch(/^__Host-svc_csrf=/);
    expect(cookie).toContain("Secure");
    expect(res.headers["strict-transport-security"]).toMatch(/max-age=/);
  });
});

describe("in production", () => {
  let production: TestApp;

  beforeAll(async () => {
    production = await createTestApp({
      NODE_ENV: "production",
      PUBLIC_URL: "https://workspace.example",
      TRUST_PROXY: "127.0.0.1",
    });
  });
  afterAll(() => production.close());

  it("sends a Secure __Host- cookie and HSTS behind a TLS proxy", async () => {
    const res = await production.app.inject({
      method: "GET",
      url: "/login",
      headers: { "x-forwarded-proto": "https" },
    });
    expect(res.statusCode).toBe(200);
    const cookie = setCookieOf(res.headers);
    expect(cookie).toMatch(/^__Host-svc_csrf=/);
    expect(cookie).toContain("Secure");
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Lax");
    expect(res.headers["strict-transport-security"]).toMatch(/max-age=/);
    expect(res.headers["content-security-policy"]).toContain("upgrade-insecure-requests");
  });
});

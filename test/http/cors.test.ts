import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteAddon } from "../../src/oauth/addons.js";
import { PublicClientOrigins } from "../../src/oauth/public-client-origins.js";
import {
  importOAuthWorkspaces,
  issueCode,
  pkcePair,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { eventually } from "../support/eventually.js";
import { mintToken } from "../support/fixtures.js";

const ADDON = "https://gantt.addon.example";
const STRANGER = "https://evil.example";
const EXPOSED = "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-Id";

let t: TestApp;
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let publicClient: Awaited<ReturnType<typeof registerClient>>;
let token: string;

beforeAll(async () => {
  // Verdicts on unknown origins expire at once; at most three origins are remembered.
  t = await createTestApp({
    RATE_LIMIT_MAX: "3",
    CORS_UNKNOWN_ORIGIN_MAX_AGE_MS: "1",
    CORS_ORIGIN_CACHE_SIZE: "3",
  });
  fixtures = await importOAuthWorkspaces(t.db);
  publicClient = await registerClient(t.db, fixtures.devco, [`${ADDON}/callback`], {
    isPublic: true,
  });
  // Unauthenticated requests that must not be refused come from addresses of their own, since
  // the API's budget is small here to reach a 429 quickly.
  // A confidential client's pages run on a server: its origin gets no CORS.
  await registerClient(t.db, fixtures.devco, ["https://server.addon.example/callback"]);
  token = await mintToken(t.db, fixtures.acme);
});
afterAll(() => t.close());

function preflight(url: string, origin: string, method = "GET"): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "OPTIONS",
    url,
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "authorization, content-type, idempotency-key",
    },
  });
}

function corsHeadersOf(response: LightMyRequestResponse): string[] {
  return Object.keys(response.headers).filter((name) => name.startsWith("access-control-"));
}

describe("the API under /api/v1", () => {
  it("answers a preflight for any origin, cached, without credentials", async () => {
    const response = await preflight("/api/v1/tasks", STRANGER, "POST");
    expect(response.statusCode).toBe(204);
    expect(response.headers["access-control-allow-origin"]).toBe("*");
    expect(response.headers["access-control-allow-methods"]).toContain("POST");
    expect(response.headers["access-control-allow-headers"]).toBe(
      "Authorization, Content-Type, Idempotency-Key",
    );
    expect(Number(response.headers["access-control-max-age"])).toBeGreaterThan(0);
    expect(response.headers["access-control-allow-credentials"]).toBeUndefined();
    expect(response.headers["x-request-id"]).toBeDefined();
  });

  it("answers preflights before the rate limit and the access checks", async () => {
    for (let i = 0; i < 10; i++) {
      const response = await preflight("/api/v1/me", STRANGER);
      expect(response.statusCode).toBe(204);
      expect(response.headers["ratelimit-limit"]).toBeUndefined();
    }
    expect((await preflight("/api/v1/no-such-endpoint", STRANGER)).statusCode).toBe(204);
  });

  it("exposes the rate-limit headers and the request id, on success and on refusal", async () => {
    const ok = await t.app.inject({
      method: "GET",
      url: "/api/v1/me",
      headers: { origin: STRANGER, authorization: `Bearer ${token}` },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers["access-control-allow-origin"]).toBe("*");
    expect(ok.headers["access-control-expose-headers"]).toBe(EXPOSED);
    expect(ok.headers["access-control-allow-credentials"]).toBeUndefined();

    const refused = await t.app.inject({
      method: "GET",
      url: "/api/v1/me",
      headers: { origin: STRANGER },
      remoteAddress: "192.0.2.2",
    });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers["access-control-allow-origin"]).toBe("*");
    expect(refused.headers["access-control-expose-headers"]).toBe(EXPOSED);

    let limited: LightMyRequestResponse | undefined;
    for (let i = 0; i < 5 && limited?.statusCode !== 429; i++) {
      limited = await t.app.inject({
        method: "GET",
        url: "/api/v1/me",
        headers: { origin: STRANGER, authorization: `Bearer ${token}` },
      });
    }
    expect(limited?.statusCode).toBe(429);
    expect(limited?.headers["access-control-allow-origin"]).toBe("*");
    expect(limited?.headers["retry-after"]).toBeDefined();
  });

  it("leaves an OPTIONS request that is no preflight to the not-found answer", async () => {
    const response = await t.app.inject({
      method: "OPTIONS",
      url: "/api/v1/tasks",
      remoteAddress: "192.0.2.1",
    });
    expect(response.statusCode).toBe(404);
    expect(response.json().error).toBe("not_found");
  });
});

describe("the token endpoint and the OAuth metadata", () => {
  const endpoints = [
    ["/api/v1/oauth/token", "POST"],
    ["/.well-known/oauth-authorization-server", "GET"],
  ] as const;

  it.each(endpoints)("%s answers a public client's origin", async (url, method) => {
    const response = await preflight(url, ADDON, method);
    expect(response.statusCode).toBe(204);
    expect(response.headers["access-control-allow-origin"]).toBe(ADDON);
    expect(response.headers.vary).toContain("Origin");
    expect(response.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it.each(endpoints)("%s gives other origins no CORS headers", async (url, method) => {
    for (const origin of [STRANGER, "https://server.addon.example", "null"]) {
      expect(corsHeadersOf(await preflight(url, origin, method))).toEqual([]);
    }
    const metadata = await t.app.inject({
      method: "GET",
      url: "/.well-known/oauth-authorization-server",
      headers: { origin: STRANGER },
    });
    expect(metadata.statusCode).toBe(200);
    expect(corsHeadersOf(metadata)).toEqual([]);
  });

  it("judges the token endpoint by its route, however its path is spelled", async () => {
    const response = await t.app.inject({
      method: "POST",
      url: "/api/v1/oauth/%74oken",
      headers: { origin: STRANGER, "content-type": "application/x-www-form-urlencoded" },
      payload: "grant_type=authorization_code",
      remoteAddress: "192.0.2.4",
    });
    expect(response.statusCode).toBe(400);
    expect(corsHeadersOf(response)).toEqual([]);
  });

  it("lets the public client's page read the issued token", async () => {
    const pkce = pkcePair();
    const code = await issueCode(t.db, {
      clientRecordId: publicClient.id,
      organization: fixtures.acme,
      redirectUri: publicClient.redirectUri,
      scopes: ["tasks:read"],
      codeChallenge: pkce.challenge,
    });
    const response = await t.app.inject({
      method: "POST",
      url: "/api/v1/oauth/token",
      headers: { origin: ADDON, "content-type": "application/x-www-form-urlencoded" },
      remoteAddress: "192.0.2.3",
      payload: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: publicClient.redirectUri,
        client_id: publicClient.clientId,
        code_verifier: pkce.verifier,
      }).toString(),
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["access-control-allow-origin"]).toBe(ADDON);
  });

  it("answers a public client registered a moment ago", async () => {
    const origin = "https://new.addon.example";
    expect(corsHeadersOf(await preflight("/api/v1/oauth/token", origin, "POST"))).toEqual([]);
    await registerClient(t.db, fixtures.devco, [`${origin}/cb`], { isPublic: true });
    expect(await allowedOriginOf(origin)).toBe(origin);
  });

  it("finds an origin however its redirect URI spells the host and the default port", async () => {
    await registerClient(t.db, fixtures.devco, ["https://Spelled.Addon.example:443?from=cb"], {
      isPublic: true,
    });
    expect(await allowedOriginOf("https://spelled.addon.example")).toBe(
      "https://spelled.addon.example",
    );
    // A longer host name that merely starts with the registered one is another origin.
    expect(await allowedOriginOf("https://spelled.addon.ex")).toBeUndefined();
    expect(await allowedOriginOf("https://spelled.addon.example:8443")).toBeUndefined();
  });

  it("remembers a public client's origin, and forgets the least recently asked beyond its size", async () => {
    const origin = "https://removed.addon.example";
    const client = await registerClient(t.db, fixtures.devco, [`${origin}/cb`], {
      isPublic: true,
    });
    expect(await allowedOriginOf(origin)).toBe(origin);
    await deleteAddon(t.db, { clientId: client.clientId });
    // Still trusted for CORS_KNOWN_ORIGIN_MAX_AGE_MS (a minute here).
    expect(await allowedOriginOf(origin)).toBe(origin);
    // Three other origins push it out of a cache of three, so it is looked up again.
    for (const other of ["https://a.example", "https://b.example", "https://c.example"]) {
      expect(await allowedOriginOf(other)).toBeUndefined();
    }
    expect(await allowedOriginOf(origin)).toBeUndefined();
  });

  it("looks a known origin up again once CORS_KNOWN_ORIGIN_MAX_AGE_MS has passed", async () => {
    const origins = new PublicClientOrigins(t.db, {
      knownMaxAgeMs: 1,
      unknownMaxAgeMs: 60_000,
      maxEntries: 10,
    });
    const origin = "https://brief.addon.example";
    const client = await registerClient(t.db, fixtures.devco, [`${origin}/cb`], {
      isPublic: true,
    });
    expect(await origins.allows(origin)).toBe(true);
    await deleteAddon(t.db, { clientId: client.clientId });
    await eventually(async () => !(await origins.allows(origin)));
  });
});

/** The origin the token endpoint's preflight allows, if any. */
async function allowedOriginOf(origin: string): Promise<string | undefined> {
  const response = await preflight("/api/v1/oauth/token", origin, "POST");
  const allowed = response.headers["access-control-allow-origin"];
  return typeof allowed === "string" ? allowed : undefined;
}

describe("browser pages", () => {
  it.each(["/login", "/oauth/authorize", "/admin"])("%s stays same-origin", async (url) => {
    const get = await t.app.inject({ method: "GET", url, headers: { origin: ADDON } });
    expect(corsHeadersOf(get)).toEqual([]);
    const options = await preflight(url, ADDON, "POST");
    expect(options.statusCode).not.toBe(204);
    expect(corsHeadersOf(options)).toEqual([]);
  });
});

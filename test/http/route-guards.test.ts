import { randomUUID } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allScopes, type Scope } from "../../src/core/scopes.js";
import { importOAuthWorkspaces, PASSWORD, registerClient } from "../oauth/oauth-fixtures.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { mintToken, type Workspace } from "../support/fixtures.js";
import {
  fillPath,
  openApiPath,
  pathParameters,
  type RegisteredRoute,
  registeredRoutes,
} from "../support/registered-routes.js";

type Operation = {
  operationId?: string;
  security?: Record<string, string[]>[];
  responses?: Record<string, unknown>;
};

/**
 * How a route that the OpenAPI document leaves out is guarded:
 * - `public`: answers anyone (probes, the document and its reference, metadata, assets);
 * - `client-authentication`: the OAuth token endpoint, refused without the client's secret;
 * - `signed-in`: a page that sends a signed-out visitor to sign in;
 * - `admin`: the admin area, for a signed-in admin of the organisation only, every form
 *   refused without its CSRF token;
 * - `form`: a form post refused without its CSRF token;
 * - `preflight`: answers CORS preflights (checked in cors.test.ts), any other OPTIONS is 404.
 */
type Guard = "public" | "client-authentication" | "signed-in" | "admin" | "form" | "preflight";

/**
 * The reviewed list of routes outside the OpenAPI document, each with its guard. A route added
 * to the app without being documented, or listed here, fails this file.
 */
const UNDOCUMENTED: Record<string, Guard> = {
  "GET /healthz": "public",
  "GET /readyz": "public",
  "GET /api/v1/openapi.json": "public",
  "GET /api/v1/docs/": "public",
  "GET /api/v1/docs/js/scalar.js": "public",
  "GET /api/v1/docs/js/reference.js": "public",
  "GET /.well-known/oauth-authorization-server": "public",
  "OPTIONS /api/v1*": "preflight",
  "OPTIONS /.well-known*": "preflight",
  "GET /assets/site.css": "public",
  "GET /favicon.ico": "public",
  "GET /login": "public",
  "POST /login": "form",
  "POST /logout": "form",
  "POST /api/v1/oauth/token": "client-authentication",
  "GET /oauth/authorize": "signed-in",
  "POST /oauth/authorize": "form",
  "GET /admin": "admin",
  "GET /admin/": "admin",
  "GET /admin/:org": "admin",
  "GET /admin/:org/tokens": "admin",
  "POST /admin/:org/tokens": "admin",
  "GET /admin/:org/tokens/:id/revoke": "admin",
  "POST /admin/:org/tokens/:id/revoke": "admin",
  "GET /admin/:org/addons": "admin",
  "POST /admin/:org/addons": "admin",
  "GET /admin/:org/addons/:id": "admin",
  "POST /admin/:org/addons/:id": "admin",
  "POST /admin/:org/addons/:id/rotate-secret": "admin",
  "GET /admin/:org/addons/:id/delete": "admin",
  "POST /admin/:org/addons/:id/delete": "admin",
  "GET /admin/:org/apps": "admin",
  "GET /admin/:org/connections": "admin",
  "GET /admin/:org/connections/:id/revoke": "admin",
  "POST /admin/:org/connections/:id/revoke": "admin",
  "GET /admin/:org/integrations": "admin",
  "GET /admin/:org/activity": "admin",
  "GET /admin/:org/webhooks": "admin",
  "POST /admin/:org/webhooks": "admin",
  "POST /admin/:org/webhooks/retry-failed": "admin",
  "GET /admin/:org/webhooks/:id": "admin",
  "POST /admin/:org/webhooks/:id/enable": "admin",
  "POST /admin/:org/webhooks/:id/disable": "admin",
  "POST /admin/:org/webhooks/:id/ping": "admin",
  "POST /admin/:org/webhooks/:id/retry-exhausted": "admin",
  "GET /admin/:org/webhooks/:id/edit": "admin",
  "POST /admin/:org/webhooks/:id/edit": "admin",
  "POST /admin/:org/webhooks/:id/rotate-secret": "admin",
  "GET /admin/:org/webhooks/:id/delete": "admin",
  "POST /admin/:org/webhooks/:id/delete": "admin",
  "POST /admin/:org/webhooks/:id/deliveries/:deliveryId/redeliver": "admin",
};

let t: TestApp;
let paths: Record<string, Record<string, Operation>>;
let routes: RegisteredRoute[];
let fixtures: Awaited<ReturnType<typeof importOAuthWorkspaces>>;
let client: Awaited<ReturnType<typeof registerClient>>;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: "100000", AUTH_RATE_LIMIT_MAX: "100000" });
  paths = (await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).json().paths;
  routes = registeredRoutes(t.app);
  fixtures = await importOAuthWorkspaces(t.db);
  client = await registerClient(t.db, fixtures.devco, ["https://addon.example/callback"]);
});
afterAll(() => t.close());

function key(route: RegisteredRoute): string {
  return `${route.method} ${route.url}`;
}

/** The OpenAPI operation a registered route serves (a HEAD is its GET's), if documented. */
function operationOf(route: RegisteredRoute): Operation | undefined {
  if (!route.url.startsWith("/api/v1/")) return undefined;
  const method = route.method === "HEAD" ? "get" : route.method.toLowerCase();
  return paths[openApiPath(route.url)]?.[method];
}

/** The guard of an undocumented route; a HEAD route has its GET's. */
function guardOf(route: RegisteredRoute): Guard | undefined {
  return UNDOCUMENTED[key({ ...route, method: route.method === "HEAD" ? "GET" : route.method })];
}

/** Path parameters filled with values that name nothing: guards answer before any lookup. */
function concrete(route: RegisteredRoute): string {
  const values: Record<string, string> = {};
  for (const name of pathParameters(route.url)) {
    values[name] = name === "slug" || name === "org" ? "acme" : randomUUID();
  }
  return fillPath(route.url, values);
}

/** The one scope an operation requires, or null for one that any valid token may call. */
function scopeOf(operation: Operation): Scope | null {
  const scopes = new Set(operation.security?.flatMap((each) => Object.values(each).flat()));
  expect(scopes.size).toBeLessThanOrEqual(1);
  const [scope] = [...scopes];
  if (scope === undefined) return null;
  expect(allScopes).toContain(scope);
  return scope as Scope;
}

function send(
  route: RegisteredRoute,
  options: { url?: string; token?: string; session?: InjectSession; form?: Record<string, string> },
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.session !== undefined) {
    headers.cookie = [...options.session.cookies]
      .map(([name, value]) => `${name}=${value}`)
      .join("; ");
  }
  const url = options.url ?? concrete(route);
  if (route.method === "GET" || route.method === "HEAD") {
    return t.app.inject({ method: route.method, url, headers });
  }
  if (url.startsWith("/api/v1/") && url !== "/api/v1/oauth/token") {
    headers["content-type"] = "application/json";
    return t.app.inject({ method: route.method, url, headers, payload: "{}" });
  }
  headers["content-type"] = "application/x-www-form-urlencoded";
  const payload = new URLSearchParams(options.form ?? {}).toString();
  return t.app.inject({ method: route.method, url, headers, payload });
}

describe("route declarations", () => {
  it("gives every operation an id, its security and the 200/401/429 responses", () => {
    const operations = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        name: `${method} ${path}`,
        operation,
      })),
    );
    expect(operations.length).toBeGreaterThan(1);
    for (const { name, operation } of operations) {
      expect(operation.operationId, `${name} operationId`).toBeTypeOf("string");
      expect(operation.security?.length, `${name} security`).toBeGreaterThan(0);
      const statuses = Object.keys(operation.responses ?? {});
      expect(statuses, name).toEqual(expect.arrayContaining(["200", "401", "429"]));
      const scopes =
        operation.security?.flatMap((requirement) => Object.values(requirement).flat()) ?? [];
      if (scopes.length > 0) expect(statuses, name).toContain("403");
    }
  });
});

describe("every registered route", () => {
  it("is either an operation of the OpenAPI document or on the reviewed list, not both", () => {
    expect(routes.length).toBeGreaterThan(40);
    const unclassified = routes.filter(
      (route) => (operationOf(route) === undefined) === (guardOf(route) === undefined),
    );
    expect(unclassified.map(key)).toEqual([]);
  });

  it("leaves nothing on the reviewed list that is no longer a route", () => {
    const registered = new Set(routes.map(key));
    expect(Object.keys(UNDOCUMENTED).filter((route) => !registered.has(route))).toEqual([]);
  });

  it("serves every operation of the OpenAPI document", () => {
    const registered = new Set(
      routes
        .filter((route) => route.method !== "HEAD")
        .map((route) => openApiPath(route.url) + route.method),
    );
    const documented = Object.entries(paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => path + method.toUpperCase()),
    );
    expect(documented.filter((operation) => !registered.has(operation))).toEqual([]);
  });
});

describe("the API's operations", () => {
  let workspace: Workspace;
  beforeAll(() => {
    workspace = fixtures.acme;
  });

  it("refuse a request without a bearer token, or with one that is not live, with 401", async () => {
    const operations = routes.filter((route) => operationOf(route) !== undefined);
    expect(operations.length).toBeGreaterThan(20);
    for (const route of operations) {
      for (const token of [undefined, "svc_live_unknown", "not-a-token"]) {
        const res = await send(route, { token });
        expect(res.statusCode, `${key(route)} with ${token}`).toBe(401);
        expect(res.headers["www-authenticate"], key(route)).toMatch(/^Bearer realm="api"/);
        if (route.method !== "HEAD") expect(res.json().error, key(route)).toBe("invalid_token");
      }
    }
  });

  it("refuse a token without the operation's scope with 403, and let its scope through", async () => {
    const operations = routes.filter((route) => operationOf(route) !== undefined);
    const none = await mintToken(t.db, workspace, []);
    for (const route of operations) {
      const scope = scopeOf(operationOf(route) as Operation);
      if (scope === null) {
        // Any valid token, even one holding no scope at all.
        expect((await send(route, { token: none })).statusCode, key(route)).toBe(200);
        continue;
      }
      const others = await mintToken(
        t.db,
        workspace,
        allScopes.filter((other) => other !== scope),
      );
      const refused = await send(route, { token: others });
      expect(refused.statusCode, `${key(route)} without ${scope}`).toBe(403);
      expect(refused.headers["www-authenticate"], key(route)).toContain(`scope="${scope}"`);
      const only = await mintToken(t.db, workspace, [scope]);
      const allowed = await send(route, { token: only });
      expect([401, 403], `${key(route)} with only ${scope}`).not.toContain(allowed.statusCode);
    }
  });
});

describe("the routes outside the OpenAPI document", () => {
  let admin: InjectSession;
  let member: InjectSession;
  let adminCsrf: string;
  let memberCsrf: string;

  beforeAll(async () => {
    admin = new InjectSession(t.app);
    await admin.signIn("admin@acme.example", PASSWORD);
    adminCsrf = await admin.csrfTokenOf("/admin/acme/tokens");
    member = new InjectSession(t.app);
    await member.signIn("member@acme.example", PASSWORD);
    // The refusal page carries the sign-out form, and with it the session's CSRF token.
    memberCsrf = await member.csrfTokenOf("/admin");
  });

  function guarded(guard: Guard): RegisteredRoute[] {
    return routes.filter((route) => guardOf(route) === guard);
  }

  it("answer the public ones without any credential", async () => {
    const open = guarded("public");
    expect(open.length).toBeGreaterThan(5);
    for (const route of open) {
      expect((await send(route, {})).statusCode, key(route)).toBe(200);
    }
  });

  it("answer an OPTIONS request that is no CORS preflight as an unknown path", async () => {
    const preflights = guarded("preflight");
    expect(preflights.length).toBeGreaterThan(0);
    for (const route of preflights) {
      const url = route.url.replace("*", "/anything");
      const response = await t.app.inject({ method: "OPTIONS", url });
      expect(response.statusCode, key(route)).toBe(404);
    }
  });

  it("refuse the token endpoint without client authentication", async () => {
    const [route] = guarded("client-authentication");
    if (route === undefined) throw new Error("the token endpoint is a route");
    const form = {
      grant_type: "authorization_code",
      code: "svca_unknown",
      redirect_uri: client.redirectUri,
      client_id: client.clientId,
    };
    const attempts: Record<string, string>[] = [{}, { client_secret: "svcs_wrong" }];
    for (const credentials of attempts) {
      const res = await send(route, { form: { ...form, ...credentials } });
      expect(res.statusCode, JSON.stringify(credentials)).toBe(401);
      expect(res.json().error).toBe("invalid_client");
    }
  });

  it("send a signed-out visitor of a signed-in page to sign in, coming back afterwards", async () => {
    const pages = guarded("signed-in");
    expect(pages.length).toBeGreaterThan(0);
    const query = new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      response_type: "code",
      scope: "projects:read",
      state: "guard",
    });
    for (const route of pages) {
      const url = `${route.url}?${query.toString()}`;
      const res = await send(route, { url });
      expect(res.statusCode, key(route)).toBe(303);
      expect(res.headers.location, key(route)).toBe(
        `/login?${new URLSearchParams({ return_to: url }).toString()}`,
      );
    }
  });

  it("refuse every form post without its CSRF token, signed in or not", async () => {
    const posts = routes.filter((route) => route.method === "POST" && guardOf(route) !== undefined);
    const forms = posts.filter((route) => guardOf(route) !== "client-authentication");
    expect(forms.length).toBeGreaterThan(10);
    for (const route of forms) {
      for (const session of [undefined, admin]) {
        const res = await send(route, { session, form: { decision: "approve" } });
        expect(res.statusCode, `${key(route)} signed ${session ? "in" : "out"}`).toBe(403);
        expect(res.body, key(route)).toContain("Form not accepted");
      }
    }
  });

  it("send a signed-out visitor of the admin area to sign in", async () => {
    const pages = guarded("admin").filter((route) => route.method !== "POST");
    expect(pages.length).toBeGreaterThan(10);
    for (const route of pages) {
      const url = concrete(route);
      const res = await send(route, { url });
      expect(res.statusCode, key(route)).toBe(303);
      expect(res.headers.location, key(route)).toBe(
        `/login?${new URLSearchParams({ return_to: url }).toString()}`,
      );
    }
  });

  it("refuse the admin area to a member who administers nothing, forms included", async () => {
    const all = guarded("admin");
    for (const route of all) {
      const res = await send(route, { session: member, form: { _csrf: memberCsrf } });
      expect(res.statusCode, key(route)).toBe(403);
      if (route.method !== "HEAD") expect(res.body, key(route)).toContain("Admins only");
    }
  });

  it("let the organisation's admin past the guard of every admin page", async () => {
    const pages = guarded("admin").filter((route) => route.method === "GET");
    for (const route of pages) {
      const res = await send(route, { session: admin });
      // Past the guard: the page, a redirect inside the admin area, or an id that names nothing.
      expect([200, 301, 303, 404], key(route)).toContain(res.statusCode);
      expect(String(res.headers.location ?? ""), key(route)).not.toMatch(/^\/login/);
    }
    const posted = await send(
      { method: "POST", url: "/admin/:org/webhooks/retry-failed" },
      { session: admin, form: { _csrf: adminCsrf } },
    );
    expect(posted.statusCode).toBe(303);
  });
});

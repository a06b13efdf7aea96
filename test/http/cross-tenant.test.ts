import { randomBytes, randomUUID } from "node:crypto";
import type { HTTPMethods, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.js";
import { type ComparableAnswer, comparableAnswer } from "../support/comparable-answers.js";
import {
  fillPath,
  openApiPath,
  pathParameters,
  type RegisteredRoute,
  registeredRoutes,
} from "../support/registered-routes.js";
import { tableDigests } from "../support/table-digests.js";
import {
  meeting,
  mirroredTenants,
  objectIdsOf,
  projectContents,
  rowsForExistingOrganization,
  type Tenant,
} from "../support/tenants.js";

/*
 * Two organisations built alike, and every route that takes an id or a slug (the API, the
 * admin area, the OAuth endpoints) sent the other organisation's ids by a member of the first:
 * each answer must be the answer to an id that never existed, byte for byte once the request
 * id is out, and must write nothing. Then, inside one organisation, a private project and
 * restricted meetings must leave every answer of the API as it was before they existed.
 *
 * The routes come from the app's router, so a route added later is walked too; a path
 * parameter or a body id this file has no values for fails the walk instead of escaping it.
 */

type Operation = { operationId: string; parameters?: Parameter[]; requestBody?: unknown };
type Parameter = { in: string; name: string; schema?: { enum?: string[] } };
type OpenApiDocument = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};

const API = "/api/v1";
const TOKEN_ENDPOINT = `${API}/oauth/token`;
const AUTHORIZE = "/oauth/authorize";

let t: TestApp;
let alpha: Tenant;
let bravo: Tenant;
let routes: RegisteredRoute[];
let openApi: OpenApiDocument;

beforeAll(async () => {
  t = await createTestApp({
    RATE_LIMIT_MAX: "1000000",
    AUTH_RATE_LIMIT_MAX: "1000000",
    PAGE_RATE_LIMIT_MAX: "1000000",
  });
  [alpha, bravo] = await mirroredTenants(t, ["alpha", "bravo"]);
  routes = registeredRoutes(t.app);
  openApi = (await t.app.inject({ method: "GET", url: `${API}/openapi.json` })).json();
});
afterAll(() => t.close());

// ---------------------------------------------------------------------------------------------
// Sending requests as a member of an organisation

/** A request as one organisation's member sends it: bearer token, signed-in page, or form. */
type Call = {
  method: HTTPMethods;
  url: string;
  as: Tenant;
  body?: Record<string, unknown>;
};

type Answer = ComparableAnswer & { notice?: string };

function key(method: string, url: string): string {
  return `${method} ${url}`;
}

function isApiRoute(url: string): boolean {
  return url.startsWith(`${API}/`) && url !== TOKEN_ENDPOINT;
}

function operationOf(route: RegisteredRoute): Operation | undefined {
  if (!isApiRoute(route.url)) return undefined;
  const method = route.method === "HEAD" ? "get" : route.method.toLowerCase();
  return openApi.paths[openApiPath(route.url)]?.[method];
}

function cookieHeader(tenant: Tenant): string {
  return [...tenant.session.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
}

function formBody(fields: Record<string, unknown>): string {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
  return form.toString();
}

function inject(call: Call): Promise<LightMyRequestResponse> {
  const { method, url, as, body } = call;
  if (url === TOKEN_ENDPOINT) {
    const payload = formBody(body ?? {});
    const headers = { "content-type": "application/x-www-form-urlencoded" };
    return t.app.inject({ method, url, headers, payload });
  }
  if (isApiRoute(url)) {
    const headers: Record<string, string> = { authorization: `Bearer ${as.token}` };
    if (body === undefined) return t.app.inject({ method, url, headers });
    headers["content-type"] = "application/json";
    return t.app.inject({ method, url, headers, payload: JSON.stringify(body) });
  }
  const headers: Record<string, string> = { cookie: cookieHeader(as) };
  if (method !== "POST") return t.app.inject({ method, url, headers });
  headers["content-type"] = "application/x-www-form-urlencoded";
  const payload = formBody({ _csrf: as.csrf, ...body });
  return t.app.inject({ method, url, headers, payload });
}

const NOTICE = /role="status">([^<]*)</;

/**
 * The answer as the caller sees it; after a page's redirect, also the notice the next page
 * shows (taking it, so it cannot spill into the next answer).
 */
async function answerOf(call: Call, echoed: Record<string, string> = {}): Promise<Answer> {
  const response = await inject(call);
  const answer: Answer = comparableAnswer(response, echoed);
  const location = response.headers.location;
  if (!isApiRoute(call.url) && response.statusCode === 303 && typeof location === "string") {
    const next = await call.as.session.get(location);
    answer.notice = NOTICE.exec(next.body)?.[1] ?? "";
  }
  return answer;
}

// ---------------------------------------------------------------------------------------------
// What each path parameter and body id is filled with

/** What the path segment before a parameter says it names. */
const PARAMETER_KINDS: Record<string, Kind> = {
  projects: "slug",
  pages: "page",
  tasks: "task",
  documents: "document",
  meetings: "meeting",
  admin: "organization",
  tokens: "token",
  connections: "grant",
  addons: "addon",
  webhooks: "webhook",
  deliveries: "delivery",
};
type Kind =
  | "slug"
  | "organization"
  | "page"
  | "task"
  | "document"
  | "meeting"
  | "token"
  | "grant"
  | "addon"
  | "webhook"
  | "delivery";

function kindOf(url: string, parameter: string): Kind {
  const segments = url.split("/");
  const before = segments[segments.indexOf(`:${parameter}`) - 1] ?? "";
  const kind = PARAMETER_KINDS[before];
  if (kind === undefined) {
    throw new Error(`no cross-tenant values for :${parameter} in ${url}: add its kind here`);
  }
  return kind;
}

/** Every id of the organisation that the API addresses, then those the admin area does. */
function apiIds(tenant: Tenant): string[] {
  const { page, task, document, meeting, user } = tenant.ids;
  return [...page, ...task, ...document, ...meeting, ...user];
}
function adminIds(tenant: Tenant): string[] {
  const { token, grant, addon, webhook, delivery, organization } = tenant.ids;
  return [...token, ...grant, ...addon, ...webhook, ...delivery, ...organization];
}
function allIds(tenant: Tenant): string[] {
  return [...apiIds(tenant), ...adminIds(tenant)];
}

/** A value of the same length and alphabet that names nothing. */
function sameShapeSlug(slug: string): string {
  return `q${"x".repeat(slug.length - 1)}`;
}

type ParameterValues = { own: string; foreign: string[]; control: (foreign: string) => string };

/**
 * For one path parameter: the caller's own value (for the route's other parameters), the other
 * organisation's values (the same kind first, then every other id it has), and a value that
 * names nothing, of the same shape as a foreign one.
 */
function parameterValues(url: string, parameter: string, self: Tenant, other: Tenant) {
  const kind = kindOf(url, parameter);
  const unique = (values: string[]) => [...new Set(values)];
  const values: ParameterValues = (() => {
    switch (kind) {
      case "slug":
        return { own: "rover", foreign: [`${other.slug}-lab`], control: sameShapeSlug };
      case "organization":
        return { own: self.slug, foreign: [other.slug], control: sameShapeSlug };
      case "page":
      case "task":
      case "document":
      case "meeting":
        return {
          own: self.ids[kind][0] ?? "",
          foreign: unique([...other.ids[kind], ...apiIds(other)]),
          control: () => randomUUID(),
        };
      default:
        return {
          own: kind === "token" ? self.spareTokenId : (self.ids[kind][0] ?? ""),
          foreign: unique([...other.ids[kind], ...adminIds(other)]),
          control: () => randomUUID(),
        };
    }
  })();
  expect(values.own, `${self.slug} has its own ${kind}`).not.toBe("");
  return values;
}

/** Valid bodies for the API's writes: each gets past validation to the lookup of its target. */
const API_BODIES: Record<string, Record<string, unknown>> = {
  "POST /api/v1/projects/:slug/tasks": { title: "Probe task", priority: "high" },
  "PATCH /api/v1/tasks/:task_id": { title: "Probed task", status: "done" },
  "POST /api/v1/projects/:slug/pages": { title: "Probe page", markdown: "# Probe" },
  "PATCH /api/v1/pages/:page_id": { title: "Probed page", markdown: "probed", mode: "append" },
  "POST /api/v1/projects/:slug/documents": { title: "Probe link", url: "https://probe.example/" },
  "PATCH /api/v1/documents/:document_id": { title: "Probed link", description: null },
  "POST /api/v1/meetings/:meeting_id/minutes": { markdown: "probed minutes", mode: "append" },
  "POST /api/v1/meetings/:meeting_id/notes": { notes: "probed notes" },
};

/** Valid forms for the admin area's posts (the CSRF token is added to each). */
const PAGE_FORMS: Record<string, Record<string, string>> = {
  "POST /admin/:org/tokens": { name: "probe", scopes: "projects:read", expires_in_days: "" },
  "POST /admin/:org/addons": { name: "Probe addon", redirect_uris: "https://probe.example/cb" },
  "POST /admin/:org/webhooks": { url: "http://127.0.0.1:9/probe", events: "all" },
  "POST /admin/:org/webhooks/retry-failed": {},
  "POST /admin/:org/tokens/:id/revoke": {},
  "POST /admin/:org/connections/:id/revoke": {},
  "POST /admin/:org/addons/:id": {
    name: "Probed addon",
    redirect_uris: "https://probe.example/cb",
  },
  "POST /admin/:org/addons/:id/rotate-secret": {},
  "POST /admin/:org/addons/:id/delete": {},
  "POST /admin/:org/webhooks/:id/enable": {},
  "POST /admin/:org/webhooks/:id/disable": {},
  "POST /admin/:org/webhooks/:id/ping": {},
  "POST /admin/:org/webhooks/:id/retry-exhausted": {},
  "POST /admin/:org/webhooks/:id/edit": { url: "http://127.0.0.1:9/probe", events: "task.created" },
  "POST /admin/:org/webhooks/:id/rotate-secret": {},
  "POST /admin/:org/webhooks/:id/delete": {},
  "POST /admin/:org/webhooks/:id/deliveries/:deliveryId/redeliver": {},
};

function bodyFor(route: RegisteredRoute): Record<string, unknown> | undefined {
  if (route.method === "GET" || route.method === "HEAD") return undefined;
  const body = isApiRoute(route.url)
    ? API_BODIES[key(route.method, route.url)]
    : PAGE_FORMS[key(route.method, route.url)];
  if (body === undefined) {
    throw new Error(`no body for ${route.method} ${route.url}: add a valid one to this file`);
  }
  return body;
}

/** The request bodies' id fields, from the OpenAPI document: `METHOD /path field`. */
function bodyIdFields(): string[] {
  const hasUuid = (schema: unknown): boolean =>
    typeof schema === "object" &&
    schema !== null &&
    ((schema as { format?: unknown }).format === "uuid" ||
      Object.values(schema).some((child) => hasUuid(child)));
  const resolve = (schema: unknown): Record<string, unknown> => {
    const ref = (schema as { $ref?: string } | undefined)?.$ref;
    const resolved =
      ref === undefined ? schema : openApi.components.schemas[ref.split("/").pop() ?? ""];
    return ((resolved as { properties?: Record<string, unknown> })?.properties ?? {}) as Record<
      string,
      unknown
    >;
  };
  return Object.entries(openApi.paths).flatMap(([path, methods]) =>
    Object.entries(methods).flatMap(([method, operation]) => {
      const content = (operation.requestBody as { content?: Record<string, { schema?: unknown }> })
        ?.content;
      const properties = resolve(content?.["application/json"]?.schema);
      return Object.entries(properties)
        .filter(([, schema]) => hasUuid(schema))
        .map(([field]) => `${method.toUpperCase()} ${path} ${field}`);
    }),
  );
}

type BodyIdRequest = {
  /** The request sending `id` in the field, by a member of `self`. */
  call: (self: Tenant, id: string) => Omit<Call, "as">;
  /** An id of `self` that the field accepts. */
  own: (self: Tenant) => string | undefined;
};

/** For each id a request body carries: how to send one there. */
const BODY_ID_REQUESTS: Record<string, BodyIdRequest> = {
  "POST /projects/{slug}/tasks assigned_to": {
    call: (_self, id) => ({
      method: "POST",
      url: `${API}/projects/rover/tasks`,
      body: { title: "Probe task", assigned_to: id },
    }),
    own: (self) => self.ids.user[1],
  },
  "PATCH /tasks/{task_id} assigned_to": {
    call: (self, id) => ({
      method: "PATCH",
      url: `${API}/tasks/${self.ids.task[0]}`,
      body: { assigned_to: id },
    }),
    own: (self) => self.ids.user[0],
  },
  "POST /projects/{slug}/pages parent_page_id": {
    call: (_self, id) => ({
      method: "POST",
      url: `${API}/projects/rover/pages`,
      body: { title: "Probe page", parent_page_id: id },
    }),
    own: (self) => self.ids.page[0],
  },
  "POST /webhooks/ping webhook_id": {
    call: (_self, id) => ({
      method: "POST",
      url: `${API}/webhooks/ping`,
      body: { webhook_id: id },
    }),
    own: (self) => self.ids.webhook[0],
  },
};

function bodyIdRequest(field: string): BodyIdRequest {
  const request = BODY_ID_REQUESTS[field];
  if (request === undefined) throw new Error(`no cross-tenant request for the body id ${field}`);
  return request;
}

// ---------------------------------------------------------------------------------------------
// Comparing a foreign id's answer with a nonexistent one's

/** A request with another organisation's id, and the same request with an id that never was. */
type Case = {
  /** The route it covers, `METHOD /template`. */
  covers: string;
  label: string;
  probe: Call;
  control: Call;
  /** Values the answers may repeat back, blanked before comparing. */
  echoed: { probe: Record<string, string>; control: Record<string, string> };
};

function isWrite(call: Call): boolean {
  return call.method !== "GET" && call.method !== "HEAD";
}

type Outcome = { case: Case; probe: Answer; control: Answer; changed: string[] };

/**
 * Sends each case's probe and control one after the other (a write's digests taken around
 * the pair) and returns what each answered and which tables changed.
 */
async function runCases(cases: readonly Case[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const each of cases) {
    const write = isWrite(each.probe);
    const before = write ? await tableDigests(t.db) : {};
    const probe = await answerOf(each.probe, each.echoed.probe);
    const control = await answerOf(each.control, each.echoed.control);
    const after = write ? await tableDigests(t.db) : {};
    const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
    outcomes.push({ case: each, probe, control, changed });
  }
  return outcomes;
}

function describeAnswer(answer: Answer): string {
  const notice = answer.notice === undefined ? "" : ` then "${answer.notice}"`;
  return `${answer.status} ${JSON.stringify(answer.headers)} ${answer.body.slice(0, 400)}${notice}`;
}

/** Every difference between probe and control, and every write, as one readable line each. */
function differences(outcomes: readonly Outcome[]): string[] {
  return outcomes.flatMap(({ case: { label }, probe, control, changed }) => [
    ...(JSON.stringify(probe) === JSON.stringify(control)
      ? []
      : [`${label}\n  foreign: ${describeAnswer(probe)}\n  unknown: ${describeAnswer(control)}`]),
    ...(changed.length === 0 ? [] : [`${label} changed ${changed.join(", ")}`]),
  ]);
}

/** The cases for one route: each parameter in turn given each foreign value, then all at once. */
function routeCases(route: RegisteredRoute, self: Tenant, other: Tenant): Case[] {
  const parameters = pathParameters(route.url);
  const values = Object.fromEntries(
    parameters.map((name) => [name, parameterValues(route.url, name, self, other)]),
  );
  const own = Object.fromEntries(parameters.map((name) => [name, values[name]?.own ?? ""]));
  const body = bodyFor(route);
  const assignments: { probe: Record<string, string>; control: Record<string, string> }[] = [];
  for (const name of parameters) {
    for (const foreign of values[name]?.foreign ?? []) {
      const control = values[name]?.control(foreign) ?? "";
      assignments.push({
        probe: { ...own, [name]: foreign },
        control: { ...own, [name]: control },
      });
    }
  }
  if (parameters.length > 1) {
    const probe: Record<string, string> = {};
    const control: Record<string, string> = {};
    for (const name of parameters) {
      probe[name] = values[name]?.foreign[0] ?? "";
      control[name] = values[name]?.control(probe[name]) ?? "";
    }
    assignments.push({ probe, control });
  }
  return assignments.map(({ probe, control }) => {
    const changedOnly = (assignment: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(assignment).filter(([name]) => assignment[name] !== own[name]),
      );
    const probeUrl = fillPath(route.url, probe);
    return {
      covers: key(route.method, route.url),
      label: `${self.slug} → ${route.method} ${probeUrl}`,
      probe: { method: route.method, url: probeUrl, as: self, body },
      control: { method: route.method, url: fillPath(route.url, control), as: self, body },
      echoed: { probe: changedOnly(probe), control: changedOnly(control) },
    };
  });
}

/** Routes of the API and the admin area that take an id or a slug in their path. */
function idBearingRoutes(): RegisteredRoute[] {
  return routes.filter(
    (route) =>
      (route.url.startsWith(`${API}/`) || route.url.startsWith("/admin")) &&
      pathParameters(route.url).length > 0,
  );
}

/** Each id of `foreignIds` in each id field of a request body, sent by a member of `self`. */
function bodyIdCases(self: Tenant, foreignIds: readonly string[]): Case[] {
  return bodyIdFields().flatMap((field) =>
    foreignIds.map((id) => {
      const control = randomUUID();
      const { call } = bodyIdRequest(field);
      return {
        covers: field,
        label: `${self.slug} → ${field} = ${id}`,
        probe: { ...call(self, id), as: self },
        control: { ...call(self, control), as: self },
        echoed: { probe: { id }, control: { id: control } },
      };
    }),
  );
}

/** A value of `prefix` and `length` random base64url characters, like the ones issued. */
function issuedLike(value: string, prefix: string): string {
  const length = value.length - prefix.length;
  return `${prefix}${randomBytes(length).toString("base64url").slice(0, length)}`;
}

/** The OAuth endpoints, whose forms carry the ids: codes, client ids, organisation ids. */
function oauthCases(self: Tenant, other: Tenant): Case[] {
  const exchange = (fields: Record<string, string>) => ({
    grant_type: "authorization_code",
    redirect_uri: self.client.redirectUri,
    client_id: self.client.clientId,
    client_secret: self.client.clientSecret,
    ...fields,
  });
  const tokenCall = (body: Record<string, string>): Call => ({
    method: "POST",
    url: TOKEN_ENDPOINT,
    as: self,
    body,
  });
  const codes = Object.entries(other.codes).map(([which, code]): Case => {
    const control = issuedLike(code, "svca_");
    return {
      covers: key("POST", TOKEN_ENDPOINT),
      label: `${self.slug}'s addon → token endpoint with ${other.slug}'s addon's ${which} code`,
      probe: tokenCall(exchange({ code })),
      control: tokenCall(exchange({ code: control })),
      echoed: { probe: {}, control: {} },
    };
  });
  const unknownCode = issuedLike(other.codes.unused, "svca_");
  const controlClient = issuedLike(other.client.clientId, "svcc_");
  const consent = (organizationId: string): Call => ({
    method: "POST",
    url: AUTHORIZE,
    as: self,
    body: {
      client_id: other.client.clientId,
      redirect_uri: other.client.redirectUri,
      response_type: "code",
      scope: "projects:read",
      state: "cross-tenant",
      decision: "approve",
      organization_id: organizationId,
    },
  });
  const controlOrganization = randomUUID();
  return [
    ...codes,
    {
      covers: key("POST", TOKEN_ENDPOINT),
      label: `${self.slug}'s addon's secret → token endpoint as ${other.slug}'s addon`,
      probe: tokenCall(exchange({ code: unknownCode, client_id: other.client.clientId })),
      control: tokenCall(exchange({ code: unknownCode, client_id: controlClient })),
      echoed: { probe: {}, control: {} },
    },
    {
      covers: key("POST", AUTHORIZE),
      label: `${self.slug}'s admin → consent approving for ${other.slug}`,
      probe: consent(other.ids.organization[0] ?? ""),
      control: consent(controlOrganization),
      echoed: { probe: {}, control: {} },
    },
  ];
}

// ---------------------------------------------------------------------------------------------

/** The callers are still who they were: a probe that signed them out would compare equal. */
async function expectCallersIntact(): Promise<void> {
  for (const tenant of [alpha, bravo]) {
    const me = await inject({ method: "GET", url: `${API}/me`, as: tenant });
    expect(me.statusCode, `${tenant.slug}'s token`).toBe(200);
    const page = await inject({ method: "GET", url: `/admin/${tenant.slug}`, as: tenant });
    expect(page.statusCode, `${tenant.slug}'s admin session`).toBe(200);
  }
}

describe("another organisation's ids and slugs", () => {
  const covered = new Set<string>();
  const directions = () =>
    [
      [alpha, bravo],
      [bravo, alpha],
    ] as const;

  it("answer every id-bearing route of the API and the admin area like ids that never were", async () => {
    const cases = directions().flatMap(([self, other]) =>
      idBearingRoutes().flatMap((route) => routeCases(route, self, other)),
    );
    const outcomes = await runCases(cases);
    for (const { covers } of cases) covered.add(covers);
    expect(differences(outcomes)).toEqual([]);
    await expectCallersIntact();
    // The unknown ids must reach the lookup, not stop at validation or fail.
    for (const { case: each, control } of outcomes) {
      expect(control.status, each.label).toBeLessThan(500);
      if (isApiRoute(each.control.url)) expect(control.status, each.label).toBe(404);
    }
    expect(outcomes.length).toBeGreaterThan(300);
  });

  it("answer the ids in request bodies like ids that never were", async () => {
    const cases = directions().flatMap(([self, other]) => bodyIdCases(self, allIds(other)));
    const outcomes = await runCases(cases);
    for (const { covers } of cases) covered.add(covers);
    expect(differences(outcomes)).toEqual([]);
    await expectCallersIntact();
    for (const { case: each, control } of outcomes) expect(control.status, each.label).toBe(400);
  });

  it("answer the OAuth endpoints' codes, clients and organisations like ones that never were", async () => {
    const cases = directions().flatMap(([self, other]) => oauthCases(self, other));
    const outcomes = await runCases(cases);
    for (const { covers } of cases) covered.add(covers);
    expect(differences(outcomes)).toEqual([]);
    await expectCallersIntact();
    for (const { case: each, control } of outcomes) {
      expect([400, 401, 403], each.label).toContain(control.status);
    }
  });

  it("leaves no id-bearing route, body id or OAuth form uncovered", () => {
    const required = [
      ...idBearingRoutes().map((route) => key(route.method, route.url)),
      ...bodyIdFields(),
      key("POST", TOKEN_ENDPOINT),
      key("POST", AUTHORIZE),
    ];
    expect(required.length).toBeGreaterThan(30);
    expect(required.filter((route) => !covered.has(route))).toEqual([]);
  });

  it("serves each organisation its own objects through the same routes and slugs", async () => {
    // The probes only mean something if the same requests with the caller's own ids work.
    for (const [self, other] of directions()) {
      const reads = routes.filter(
        (route) => route.method === "GET" && operationOf(route) !== undefined,
      );
      for (const route of reads) {
        const values = Object.fromEntries(
          pathParameters(route.url).map((name) => [
            name,
            parameterValues(route.url, name, self, other).own,
          ]),
        );
        const url = fillPath(route.url, values);
        const res = await inject({ method: "GET", url, as: self });
        expect(res.statusCode, `${self.slug} GET ${url}`).toBe(200);
        expect(res.body, `${self.slug} GET ${url}`).not.toContain(other.slug);
        for (const id of allIds(other))
          expect(res.body, `${self.slug} GET ${url}`).not.toContain(id);
      }
    }
  });

  it("accepts the same writes on the caller's own ids, in paths and bodies", async () => {
    const writes = idBearingRoutes().filter(
      (route) => route.method !== "GET" && route.method !== "HEAD",
    );
    const acceptsOwn = async (route: RegisteredRoute) => {
      const values = Object.fromEntries(
        pathParameters(route.url).map((name) => [
          name,
          parameterValues(route.url, name, alpha, bravo).own,
        ]),
      );
      const url = fillPath(route.url, values);
      const res = await inject({ method: route.method, url, as: alpha, body: bodyFor(route) });
      expect([200, 303], `${route.method} ${url}: ${res.body.slice(0, 300)}`).toContain(
        res.statusCode,
      );
      expect(String(res.headers.location ?? ""), url).not.toMatch(/^\/login/);
    };
    // A delete takes the record the other writes address, so deletes go last.
    const isDelete = (route: RegisteredRoute) => route.url.endsWith("/delete");
    for (const route of writes.filter((route) => !isDelete(route))) await acceptsOwn(route);
    for (const field of bodyIdFields()) {
      const { call, own } = bodyIdRequest(field);
      const res = await inject({ ...call(alpha, own(alpha) ?? ""), as: alpha });
      expect(res.statusCode, `${field}: ${res.body.slice(0, 300)}`).toBe(200);
    }
    for (const route of writes.filter(isDelete)) await acceptsOwn(route);
  });
});

// ---------------------------------------------------------------------------------------------

describe("a private project and restricted meetings", () => {
  let hidden: ReturnType<typeof rowsForExistingOrganization>;
  let hiddenIds: string[];
  let visibleIds: string[];
  let calls: Call[];
  let before: { answers: Answer[]; changed: string[][] };
  const covered = new Set<string>();

  /** The query strings a documented GET is sent with: none, then each filter. */
  function queryVariants(operation: Operation): string[] {
    const variants = [""];
    for (const parameter of operation.parameters ?? []) {
      if (parameter.in !== "query") continue;
      if (parameter.schema?.enum !== undefined) {
        variants.push(...parameter.schema.enum.map((value) => `?${parameter.name}=${value}`));
      } else if (parameter.name === "from" || parameter.name === "to") {
        if (!variants.includes("?from=2026-03-02&to=2026-03-03")) {
          variants.push("?from=2026-03-02&to=2026-03-03", "?from=2026-03-02T10:00:00Z");
        }
      } else {
        throw new Error(`no values for the query parameter ${parameter.name}: add them here`);
      }
    }
    return variants;
  }

  /**
   * Every read of the API with every visible and hidden id and slug (each query variant), and
   * every write of the API aimed at the hidden ones.
   */
  function hiddenCalls(): Call[] {
    const slugs = { read: ["rover", "alpha-lab", "vault"], write: ["vault"] };
    const apiRoutes = routes.filter((route) => operationOf(route) !== undefined);
    return apiRoutes.flatMap((route) => {
      const operation = operationOf(route) as Operation;
      const read = route.method === "GET" || route.method === "HEAD";
      const parameters = pathParameters(route.url);
      if (!read && parameters.length === 0) return [];
      const assignments = parameters.reduce<Record<string, string>[]>(
        (partial, name) => {
          const kind = kindOf(route.url, name);
          const choices =
            kind === "slug"
              ? slugs[read ? "read" : "write"]
              : read
                ? [...visibleIds, ...hiddenIds]
                : hiddenIds;
          return partial.flatMap((values) =>
            choices.map((value) => ({ ...values, [name]: value })),
          );
        },
        [{}],
      );
      covered.add(key(route.method, route.url));
      const queries = read ? queryVariants(operation) : [""];
      return assignments.flatMap((values) =>
        queries.map((query) => ({
          method: route.method,
          url: `${fillPath(route.url, values)}${query}`,
          as: alpha,
          body: bodyFor(route),
        })),
      );
    });
  }

  async function answersOf(list: readonly Call[]) {
    const answers: Answer[] = [];
    const changed: string[][] = [];
    for (const call of list) {
      const write = isWrite(call);
      const digests = write ? await tableDigests(t.db) : {};
      answers.push(await answerOf(call));
      const after = write ? await tableDigests(t.db) : {};
      changed.push(Object.keys(after).filter((table) => after[table] !== digests[table]));
    }
    return { answers, changed };
  }

  beforeAll(async () => {
    const vault = projectContents("secret vault", "member@alpha.example", ["2026-03-02T15:00:00Z"]);
    hidden = rowsForExistingOrganization(alpha.workspace, {
      meetings: [
        meeting("secret board", "2026-03-02T12:00:00Z", "restricted"),
        meeting("secret rover review", "2026-03-03T08:00:00Z", "restricted"),
      ],
      projects: [
        {
          slug: "vault",
          name: "Vault",
          status: "active",
          visibility: "private",
          ...vault,
          meetings: [
            ...vault.meetings,
            meeting("secret vault huddle", "2026-03-03T10:00:00Z", "restricted"),
          ],
        },
      ],
    });
    // Restricted inside a project everyone sees: the import files meetings under a new
    // project or none, so this one is moved under rover before it is written.
    const rover = alpha.workspace.projects.find((project) => project.slug === "rover");
    const review = hidden.rows.meetings.find((row) => row.title === "secret rover review");
    if (rover === undefined || review === undefined) throw new Error("rover and its review");
    review.projectId = rover.id;
    hiddenIds = Object.values(objectIdsOf(hidden)).flat();
    visibleIds = Object.values(objectIdsOf(alpha.workspace)).flat();
    calls = hiddenCalls();
    before = await answersOf(calls);
    await hidden.insert(t);
  });

  it("were written, and are what the reads below ask for", async () => {
    expect(hiddenIds.length).toBeGreaterThanOrEqual(8);
    expect(calls.length).toBeGreaterThan(100);
    // Reads that were refused (a token revoked on the way, say) would compare equal too.
    const statuses = before.answers.map((answer) => answer.status);
    expect(new Set(statuses)).toEqual(new Set([200, 404]));
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(60);
    const { meetings: meetingRows } = hidden.rows;
    expect(meetingRows.map((row) => [row.audience, row.projectId === null])).toEqual(
      expect.arrayContaining([
        ["restricted", true],
        ["restricted", false],
        ["org", false],
      ]),
    );
  });

  it("leave every answer of every read, list and filter as it was before they existed", async () => {
    const after = await answersOf(calls);
    const changedAnswers = calls.flatMap((call, index) => {
      const was = before.answers[index] as Answer;
      const now = after.answers[index] as Answer;
      return JSON.stringify(was) === JSON.stringify(now)
        ? []
        : [
            `${call.method} ${call.url}\n  before: ${describeAnswer(was)}\n  after:  ${describeAnswer(now)}`,
          ];
    });
    expect(changedAnswers).toEqual([]);
    const writes = calls.flatMap((call, index) =>
      (after.changed[index] ?? []).length === 0
        ? []
        : [`${call.method} ${call.url} changed ${after.changed[index]?.join(", ")}`],
    );
    expect(writes).toEqual([]);
    expect(before.changed.flat()).toEqual([]);
  });

  it("answer the ids in request bodies like ids that never were", async () => {
    const cases = bodyIdCases(alpha, hiddenIds);
    const outcomes = await runCases(cases);
    expect(differences(outcomes)).toEqual([]);
    await expectCallersIntact();
    for (const { case: each, control } of outcomes) expect(control.status, each.label).toBe(400);
  });

  it("are sought through every route of the API that takes an id or a slug", () => {
    const required = routes
      .filter((route) => operationOf(route) !== undefined && pathParameters(route.url).length > 0)
      .map((route) => key(route.method, route.url));
    expect(required.filter((route) => !covered.has(route))).toEqual([]);
  });
});

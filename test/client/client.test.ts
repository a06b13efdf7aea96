import { readFile } from "node:fs/promises";
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import {
  ApiError,
  type components,
  createWorkspaceClient,
  type WorkspaceClientOptions,
} from "../../packages/client/src/index.js";
import {
  renderClientTypes,
  TYPES_FILE,
  TYPES_PUBLIC_URL,
} from "../../src/client-types/render-types.js";
import { idempotencyKeys, tasks } from "../../src/db/schema/index.js";
import { createTestApp } from "../support/app.js";
import { type ServedApp, serveTestApp } from "../support/browser.js";
import { ROOT } from "../support/cli.js";
import { importOrganization, mintToken, project, type Workspace } from "../support/fixtures.js";
import { observedFetch } from "./observed-fetch.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function clientOf(served: ServedApp, options: Omit<WorkspaceClientOptions, "baseUrl">) {
  return createWorkspaceClient({ baseUrl: `${served.url}/api/v1`, ...options });
}

/** The ApiError a call threw; fails when it succeeded or threw anything else. */
async function apiErrorFrom(call: Promise<unknown>): Promise<ApiError> {
  const thrown = await call.then(
    () => null,
    (error: unknown) => error,
  );
  expect(thrown).toBeInstanceOf(ApiError);
  return thrown as ApiError;
}

/** What the server kept under an Idempotency-Key (the client's keys are random UUIDs). */
async function idempotencyRow(db: ServedApp["db"], key: string) {
  const [row] = await db
    .select({ status: idempotencyKeys.responseStatus, body: idempotencyKeys.responseBody })
    .from(idempotencyKeys)
    .where(eq(idempotencyKeys.key, key));
  return row;
}

describe("the typed client", () => {
  let served: ServedApp;
  let acme: Workspace;
  let token: string;

  beforeAll(async () => {
    served = await serveTestApp({ RATE_LIMIT_MAX: "100000" });
    acme = await importOrganization(served.db, "acme", {
      projects: [project("rover", { tasks: [{ title: "Imported first" }] })],
    });
    token = await mintToken(served.db, acme);
  });
  afterAll(() => served.close());

  it("answers the envelope's data, typed from the document", async () => {
    const client = clientOf(served, { token });
    const me = await client.get("/me");
    expect(me.organization.slug).toBe("acme");
    const listed = await client.get("/projects/{slug}/tasks", {
      params: { path: { slug: "rover" } },
    });
    expectTypeOf(listed).toEqualTypeOf<components["schemas"]["Task"][]>();
    expect(listed.map((task) => task.title)).toEqual(["Imported first"]);
    // @ts-expect-error: the path parameter is required.
    await expect(client.get("/projects/{slug}/tasks")).rejects.toBeInstanceOf(ApiError);
  });

  it("asks a token function for the token of each request", async () => {
    let asked = 0;
    const client = clientOf(served, {
      token: async () => {
        asked += 1;
        return token;
      },
    });
    await client.get("/me");
    await client.get("/projects");
    expect(asked).toBe(2);
  });

  it("sends an Idempotency-Key of its own with each POST, and none with a GET", async () => {
    const { fetch, exchanges } = observedFetch();
    const client = clientOf(served, { token, fetch });
    const first = await client.post("/projects/{slug}/tasks", {
      params: { path: { slug: "rover" } },
      body: { title: "Keyed by the client" },
    });
    await client.post("/projects/{slug}/tasks", {
      params: { path: { slug: "rover" } },
      body: { title: "Keyed by the client" },
    });
    expectTypeOf(first).toEqualTypeOf<{ id: string }>();
    await client.get("/me");
    const [one, two, read] = exchanges.map((exchange) => exchange.idempotencyKey);
    expect(one).toMatch(UUID);
    expect(two).toMatch(UUID);
    expect(two).not.toBe(one);
    expect(read).toBeNull();
    // The server kept the first POST's answer under the key the client chose.
    const row = await idempotencyRow(served.db, one ?? "");
    expect(row?.status).toBe(200);
    expect(JSON.parse(row?.body ?? "null")).toEqual({ ok: true, data: first });
  });

  it("sends the caller's Idempotency-Key, so sending again answers the first result", async () => {
    const { fetch, exchanges } = observedFetch();
    const client = clientOf(served, { token, fetch });
    const create = () =>
      client.post("/projects/{slug}/tasks", {
        params: { path: { slug: "rover" } },
        body: { title: "Created once" },
        idempotencyKey: "create-once",
      });
    const first = await create();
    const again = await create();
    expect(again).toEqual(first);
    expect(exchanges.map((exchange) => [exchange.idempotencyKey, exchange.replayed])).toEqual([
      ["create-once", null],
      ["create-once", "true"],
    ]);
    const created = await served.db.select().from(tasks).where(eq(tasks.title, "Created once"));
    expect(created).toHaveLength(1);
  });

  it("throws an ApiError with the code, message, status and request id", async () => {
    const { fetch, exchanges } = observedFetch();
    const client = clientOf(served, { token, fetch });
    const requestIdOfLast = () => exchanges.at(-1)?.requestId;

    const notFound = await apiErrorFrom(
      client.get("/projects/{slug}", { params: { path: { slug: "nowhere" } } }),
    );
    expect(notFound).toMatchObject({ status: 404, error: "not_found", retryAfterSeconds: null });
    expect(notFound.message).not.toBe("");
    expect(notFound.requestId).toBe(requestIdOfLast());

    const invalid = await apiErrorFrom(
      client.post("/projects/{slug}/tasks", {
        params: { path: { slug: "rover" } },
        body: { title: "x" },
      }),
    );
    expect(invalid).toMatchObject({ status: 400, error: "invalid_request" });
    expect(invalid.message).toMatch(/title/);
    expect(invalid.requestId).toBe(requestIdOfLast());

    const unauthenticated = await apiErrorFrom(
      clientOf(served, { token: "svc_live_not-a-token", fetch }).get("/me"),
    );
    expect(unauthenticated).toMatchObject({ status: 401, error: "invalid_token" });
    expect(unauthenticated.requestId).toMatch(UUID);
    expect(unauthenticated.requestId).toBe(requestIdOfLast());
    expect(unauthenticated.name).toBe("ApiError");
  });

  it("exposes the raw openapi-fetch client with the same token and keys", async () => {
    const { fetch, exchanges } = observedFetch();
    const client = clientOf(served, { token, fetch });
    const { data, response } = await client.raw.POST("/projects/{slug}/tasks", {
      params: { path: { slug: "rover" } },
      body: { title: "Through the raw client" },
    });
    expect(response.status).toBe(200);
    expect(data?.data.id).toMatch(UUID);
    expect(exchanges[0]?.authorization).toBe(`Bearer ${token}`);
    expect(exchanges[0]?.idempotencyKey).toMatch(UUID);
  });
});

describe("the typed client over a spent rate limit", () => {
  // One request per second per token: the second within a second is answered 429.
  let served: ServedApp;
  let acme: Workspace;

  beforeAll(async () => {
    served = await serveTestApp({ RATE_LIMIT_MAX: "1", RATE_LIMIT_WINDOW_SECONDS: "1" });
    acme = await importOrganization(served.db, "acme", { projects: [project("rover")] });
  });
  afterAll(() => served.close());

  it("sends a 429'd POST again after Retry-After, with the same Idempotency-Key", async () => {
    const token = await mintToken(served.db, acme);
    const { fetch, exchanges } = observedFetch();
    const client = clientOf(served, { token, fetch });
    await client.get("/me");
    const created = await client.post("/projects/{slug}/tasks", {
      params: { path: { slug: "rover" } },
      body: { title: "After the wait" },
    });
    expect(created.id).toMatch(UUID);
    expect(exchanges.map((exchange) => [exchange.method, exchange.status])).toEqual([
      ["GET", 200],
      ["POST", 429],
      ["POST", 200],
    ]);
    const [, limited, retried] = exchanges;
    expect(retried?.idempotencyKey).toMatch(UUID);
    expect(retried?.idempotencyKey).toBe(limited?.idempotencyKey);
    const waitedMs = (retried?.sentAt ?? 0) - (limited?.answeredAt ?? 0);
    expect(waitedMs).toBeGreaterThanOrEqual(Number(limited?.retryAfter) * 1000 - 5);
  });

  it("gives up after maxRetries with a rate_limited ApiError carrying Retry-After", async () => {
    const token = await mintToken(served.db, acme);
    // Another user of the same token takes the one request of every second first.
    const competitor = () =>
      fetch(`${served.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } }).then(
        (response) => void response.body?.cancel(),
      );
    const { fetch: observed, exchanges } = observedFetch(competitor);
    const client = clientOf(served, { token, fetch: observed, maxRetries: 2 });
    const error = await apiErrorFrom(client.get("/me"));
    expect(error).toMatchObject({ status: 429, error: "rate_limited" });
    expect(error.retryAfterSeconds).toBeGreaterThan(0);
    expect(error.requestId).toBe(exchanges.at(-1)?.requestId);
    expect(exchanges.map((exchange) => exchange.status)).toEqual([429, 429, 429]);
  });

  it("refuses a maxRetries that is not a whole number, 0 or more", () => {
    for (const maxRetries of [-1, 1.5, Number.NaN]) {
      expect(() => clientOf(served, { token: "svc_live_x", maxRetries })).toThrow(RangeError);
    }
  });
});

/** Where two texts first differ, to point at in a failure message. */
function firstDifference(committed: string, served: string): string {
  const committedLines = committed.split("\n");
  const servedLines = served.split("\n");
  const line = committedLines.findIndex((text, index) => text !== servedLines[index]);
  const at = line === -1 ? committedLines.length : line;
  return `line ${at + 1}: committed ${JSON.stringify(committedLines[at] ?? "")}, served ${JSON.stringify(servedLines[at] ?? "")}`;
}

describe("the committed client types", () => {
  it("are those of the document the app serves", async () => {
    const app = await createTestApp({ PUBLIC_URL: TYPES_PUBLIC_URL });
    try {
      const served = await app.app.inject({ method: "GET", url: "/api/v1/openapi.json" });
      const expected = await renderClientTypes(served.json());
      const committed = await readFile(path.join(ROOT, TYPES_FILE), "utf8");
      expect(
        committed === expected,
        `${TYPES_FILE} is stale against the served OpenAPI document (${firstDifference(committed, expected)}): run \`npm run client:generate\``,
      ).toBe(true);
    } finally {
      await app.close();
    }
  });
});

import { getTableName, is, sql } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import fc from "fast-check";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { allScopes, type Scope } from "../../src/core/scopes.js";
import { rowsOf } from "../../src/db/client.js";
import * as schema from "../../src/db/schema/index.js";
import { systemAudit } from "../../src/modules/audit/service.js";
import { createToken, revokeToken } from "../../src/modules/tokens/service.js";
import { removeMember } from "../../src/modules/users/service.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import type { JobQueue } from "../../src/queue/queue.js";
import { createWebhook } from "../../src/webhooks/service.js";
import { type ApiResponse, api } from "../support/api.js";
import { createTestApp } from "../support/app.js";
import { importFixture, mintToken, project, type Workspace } from "../support/fixtures.js";
import {
  type BodyCase,
  bodyPayloads,
  type DocumentedOperation,
  documentedOperations,
  hostileWireText,
  type OpenApiDocument,
  onTheWire,
  schemaValue,
  type ValueHints,
  type WireText,
} from "../support/openapi-fuzz.js";

// Every operation of the served OpenAPI document, fuzzed: path parameters, queries, headers and
// bodies, valid or hostile. Whatever arrives, the answer is one the document declares for that
// operation, in the envelope, within ANSWER_WITHIN_MS; a refused write changes nothing, and a
// read never does. The suite runs one fixed seed, so its result is reproducible; FUZZ_SEED picks
// another (`random` for a new one each run, to explore), FUZZ_PATH replays one failing case,
// FUZZ_RUNS scales the run, FUZZ_SHRINK=1 shrinks a counterexample instead of reporting it.

const DEFAULT_SEED = 20261125;
const SEED =
  process.env.FUZZ_SEED === undefined
    ? DEFAULT_SEED
    : process.env.FUZZ_SEED === "random"
      ? Date.now() % 2 ** 31
      : Number(process.env.FUZZ_SEED);
const PATH = process.env.FUZZ_PATH;
const SCALE = Number(process.env.FUZZ_RUNS ?? "1");
const SHRINK = process.env.FUZZ_SHRINK === "1";
const ANSWER_WITHIN_MS = 10_000;

// Writes reach more code (transactions, rich text, the outbox) than reads, so they get more runs.
const RUNS = { read: Math.round(80 * SCALE), write: Math.round(180 * SCALE) };

/** The spec's error table ("Errors"): the only codes a failure may carry, with their status. */
const STATUS_OF_CODE: Record<string, number> = {
  invalid_token: 401,
  insufficient_scope: 403,
  not_found: 404,
  invalid_request: 400,
  rate_limited: 429,
};

// --- the app, its workspace and its tokens ----------------------------------------------------

/** An in-process queue that also counts what requests hand it: a refused write hands nothing. */
function countingQueue(): { queue: JobQueue<WorkspaceJobs>; enqueued: () => number } {
  const inner = createInProcessQueue<WorkspaceJobs>(pino({ level: "silent" }));
  let enqueued = 0;
  const queue: JobQueue<WorkspaceJobs> = {
    ...inner,
    async enqueue(name, payload, options) {
      enqueued += 1;
      await inner.enqueue(name, payload, options);
    },
    async enqueueMany(name, jobs) {
      enqueued += jobs.length;
      await inner.enqueueMany(name, jobs);
    },
  };
  return { queue, enqueued: () => enqueued };
}

const counting = countingQueue();
// Generated from the served document, so the app must be up before the tests are declared. The
// rate limit is out of the way: a 429 would hide what the request itself gets.
const t = await createTestApp({ RATE_LIMIT_MAX: "1000000" }, { queue: counting.queue });
afterAll(async () => {
  await t.close();
  await counting.queue.close();
});

const meeting = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  startsAt: "2026-03-02T10:00:00Z",
  durationMinutes: 30,
  status: "scheduled",
  locationType: "video",
  audience: "org",
  ...extra,
});
const transcript = { status: "ready", text: "Ada: hello\nMax: hi", notes: "Notes" };
const link = (title: string) => ({
  category: "documentation",
  kind: "link",
  title,
  url: `https://example.com/${title}`,
});
const file = (title: string) => ({
  category: "research",
  kind: "file",
  title,
  filename: `${title}.pdf`,
  byteSize: 1024,
  contentType: "application/pdf",
});
const contents = (name: string) => ({
  tasks: [
    { title: `${name} task` },
    { title: `${name} done`, status: "done", due_date: "2026-05-01" },
  ],
  pages: [
    {
      title: `${name} home`,
      markdown: "# Home\n\n- a\n- b",
      children: [{ title: `${name} child`, markdown: "1. one\n2. two" }],
    },
  ],
  documents: [link(`${name}-link`), file(`${name}-file`)],
  meetings: [
    meeting(`${name} review`, { transcript, minutesMarkdown: "# Minutes" }),
    meeting(`${name} planning`),
  ],
});

const acme = await importFixture(t.db, {
  organization: { slug: "acme", name: "Acme" },
  users: [
    { email: "admin@acme.example", name: "Ada Admin", role: "admin" },
    { email: "member@acme.example", name: "Max Member", role: "member" },
    { email: "leaver@acme.example", name: "Lee Leaver", role: "member" },
  ],
  documents: [link("team-link"), file("team-file")],
  meetings: [
    meeting("All hands", { transcript }),
    meeting("Board", { audience: "restricted", transcript }),
  ],
  projects: [
    project("rover", {
      description: "The rover",
      startDate: "2026-01-01",
      targetDate: "2026-12-31",
      specs: [
        {
          slug: "mass",
          name: "Mass",
          kind: "physical",
          units: "kg",
          valueType: "number",
          versions: [
            {
              version: "1",
              status: "published",
              value: { max: 12.5 },
              publishedAt: "2026-01-02T00:00:00Z",
            },
            { version: "2", status: "draft", value: 13 },
          ],
        },
      ],
      components: [
        {
          slug: "wheel",
          name: "Wheel",
          dependsOn: ["spec:mass"],
          versions: [
            { version: "A", status: "released", lifecycleStage: "production", healthStatus: "ok" },
          ],
        },
      ],
      milestones: [
        { name: "Launch", kind: "release", status: "planned", targetDate: "2026-09-01" },
      ],
      ...contents("rover"),
    }),
    project("secret", { visibility: "private", ...contents("secret") }),
  ],
});
const other = await importFixture(t.db, {
  organization: { slug: "other", name: "Other" },
  users: [{ email: "admin@other.example", name: "Olga Other", role: "admin" }],
  documents: [link("other-link")],
  meetings: [meeting("Other hands", { transcript })],
  projects: [project("foreign", contents("foreign"))],
});

const registerWebhook = (workspace: Workspace) =>
  createWebhook(
    t.db,
    systemAudit,
    { secretKey: t.config.secretKey, production: false, maxPerOrganization: 20 },
    {
      organizationId: workspace.organization.id,
      url: "http://127.0.0.1:9/hook",
      events: ["task.created"],
    },
  );
const acmeWebhook = await registerWebhook(acme);
const otherWebhook = await registerWebhook(other);

async function tokenFor(
  workspace: Workspace,
  scopes: readonly Scope[],
  options: { userIndex?: number; expiresAt?: Date } = {},
) {
  const user = workspace.users[options.userIndex ?? 0];
  if (user === undefined) throw new Error("no such fixture user");
  return createToken(t.db, systemAudit, {
    organizationId: workspace.organization.id,
    userId: user.id,
    scopes: [...scopes],
    expiresAt: options.expiresAt ?? null,
  });
}

const readScopes = allScopes.filter((scope) => scope.endsWith(":read"));
const token = await mintToken(t.db, acme);
const tokens = {
  all: token,
  readOnly: (await tokenFor(acme, readScopes)).token,
  oneScope: (await tokenFor(acme, ["projects:read"])).token,
  other: await mintToken(t.db, other),
  expired: (await tokenFor(acme, allScopes, { expiresAt: new Date(Date.now() - 60_000) })).token,
  revoked: await (async () => {
    const minted = await tokenFor(acme, allScopes);
    await revokeToken(t.db, systemAudit, { tokenId: minted.id });
    return minted.token;
  })(),
  // Its creator left the organisation: it reads, and every write is refused (spec).
  noAuthor: (await tokenFor(acme, allScopes, { userIndex: 2 })).token,
};
await removeMember(t.db, systemAudit, { orgSlug: "acme", email: "leaver@acme.example" });

const document = (
  await t.app.inject({ method: "GET", url: "/api/v1/openapi.json" })
).json() as OpenApiDocument;
const operations = documentedOperations(document);

// --- what exists, to aim at ------------------------------------------------------------------

const rover = acme.projects[0]!;
const secret = acme.projects[1]!;
const foreign = other.projects[0]!;
const pagesOf = (p: typeof rover) =>
  p.pages.flatMap((page) => [page.id, ...page.children.map((child) => child.id)]);
const ids = (items: readonly { id: string }[]) => items.map((item) => item.id);

/**
 * Values for each path parameter and id-valued body field, reachable ones first (they are drawn
 * more often, so that successes are common), then hidden ones: private, foreign, restricted.
 */
const known: Record<string, { reachable: string[]; hidden: string[] }> = {
  slug: { reachable: ["rover"], hidden: ["secret", "foreign", "ROVER", "nope"] },
  page_id: { reachable: pagesOf(rover), hidden: [...pagesOf(secret), ...pagesOf(foreign)] },
  task_id: { reachable: ids(rover.tasks), hidden: [...ids(secret.tasks), ...ids(foreign.tasks)] },
  document_id: {
    reachable: [...ids(acme.documents), ...ids(rover.documents)],
    hidden: [...ids(secret.documents), ...ids(foreign.documents), ...ids(other.documents)],
  },
  meeting_id: {
    reachable: [acme.meetings[0]!.id, ...ids(rover.meetings)],
    hidden: [acme.meetings[1]!.id, ...ids(secret.meetings), ...ids(foreign.meetings)],
  },
  parent_page_id: { reachable: pagesOf(rover), hidden: [...pagesOf(secret), ...pagesOf(foreign)] },
  assigned_to: {
    reachable: ids(acme.users.slice(0, 2)),
    hidden: [acme.users[2]!.id, other.users[0]!.id],
  },
  webhook_id: { reachable: [acmeWebhook.id], hidden: [otherWebhook.id] },
};

function knownValue(name: string): fc.Arbitrary<string> | undefined {
  const values = known[name];
  if (values === undefined) return undefined;
  return fc.oneof(
    { arbitrary: fc.constantFrom(...values.reachable), weight: 4 },
    { arbitrary: fc.constantFrom(...values.hidden), weight: 1 },
    { arbitrary: fc.constantFrom(...values.reachable).map((id) => id.toUpperCase()), weight: 1 },
  );
}

const hints: ValueHints = knownValue;

// --- requests ----------------------------------------------------------------------------------

type Part = "path" | "query" | "headers" | "body";

type FuzzCase = {
  method: DocumentedOperation["method"];
  url: string;
  headers: Record<string, string>;
  body?: BodyCase;
  /** The parts drawn from hostile values; the others are valid. */
  hostile: Part[];
};

/** A request's parts, each valid or hostile. */
type PartArbitraries<T> = { valid: fc.Arbitrary<T>; hostile: fc.Arbitrary<T> };

function pathPart(template: string): PartArbitraries<string> {
  const names = [...template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
  const fill = (values: WireText[]) =>
    names.reduce((path, name, index) => path.replace(`{${name}}`, values[index]!.wire), template);
  const reachable = (name: string) => fc.constantFrom(...(known[name]?.reachable ?? [""]));
  const hostile = (name: string) =>
    fc.oneof(
      { arbitrary: knownValue(name)?.map(onTheWire) ?? hostileWireText, weight: 2 },
      { arbitrary: fc.uuid().map(onTheWire), weight: 1 },
      { arbitrary: hostileWireText, weight: 3 },
    );
  return {
    valid: fc.tuple(...names.map((name) => reachable(name).map(onTheWire))).map(fill),
    hostile: fc.tuple(...names.map(hostile)).map(fill),
  };
}

function queryPart(operation: DocumentedOperation): PartArbitraries<string> {
  const parameters = (operation.operation.parameters ?? []).filter((p) => p.in === "query");
  const join = (entries: string[][]) => {
    const flat = entries.flat();
    return flat.length === 0 ? "" : `?${flat.join("&")}`;
  };
  const fields = (hostile: boolean) =>
    parameters.map((parameter) => {
      const valid = schemaValue(document, parameter.schema ?? {}, hints, parameter.name).map(
        onTheWire,
      );
      const value = hostile
        ? fc.oneof({ arbitrary: valid, weight: 1 }, { arbitrary: hostileWireText, weight: 2 })
        : valid;
      // Absent, once, or repeated (which a query parser turns into an array).
      return fc
        .option(fc.array(value, { minLength: 1, maxLength: hostile ? 3 : 1 }), { freq: 2 })
        .map((values) => (values ?? []).map((v) => `${parameter.name}=${v.wire}`));
    });
  const stray = fc
    .array(fc.tuple(hostileWireText, hostileWireText), { minLength: 1, maxLength: 3 })
    .map((pairs) => pairs.map(([name, value]) => `${name.wire}=${value.wire}`));
  return {
    valid: fc.tuple(...fields(false)).map(join),
    hostile: fc.tuple(stray, ...fields(true)).map(join),
  };
}

const headerText = fc.string({
  unit: fc
    .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }))
    .map((code) => String.fromCharCode(code)),
  maxLength: 60,
});

const hostileAuthorization: fc.Arbitrary<string | undefined> = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      `Bearer ${tokens.readOnly}`,
      `Bearer ${tokens.oneScope}`,
      `Bearer ${tokens.other}`,
      `Bearer ${tokens.noAuthor}`,
      `Bearer ${tokens.expired}`,
      `Bearer ${tokens.revoked}`,
    ),
    weight: 2,
  },
  {
    arbitrary: fc.constantFrom(
      undefined,
      "",
      "Bearer",
      "Bearer ",
      `bearer ${tokens.all}`,
      `Bearer  ${tokens.all}  `,
      `Bearer ${tokens.all}x`,
      `Bearer ${tokens.all.slice(0, -1)}`,
      `Bearer ${tokens.all} ${tokens.all}`,
      `Basic ${Buffer.from("a:b").toString("base64")}`,
      `Token ${tokens.all}`,
      "Bearer svc_live_",
      `Bearer svc_live_${"A".repeat(43)}`,
      `Bearer ${"x".repeat(8000)}`,
    ),
    weight: 2,
  },
  { arbitrary: headerText.map((text) => `Bearer ${text}`), weight: 1 },
);

const hostileContentType: fc.Arbitrary<string | undefined> = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      undefined,
      "",
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json;charset=latin1",
      "application/json; charset=utf-16",
      "application/json, text/plain",
      "application/vnd.api+json",
      "application/merge-patch+json",
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/xml",
      "application/octet-stream",
      ";;;",
    ),
    weight: 3,
  },
  { arbitrary: headerText, weight: 1 },
);

const otherHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    accept: fc.constantFrom("text/html", "application/xml", "*/*", "application/json;q=0"),
    "x-request-id": fc.oneof(headerText, fc.constant("x".repeat(5000))),
    "x-forwarded-for": fc.oneof(headerText, fc.constantFrom("10.0.0.1, 10.0.0.2", "::1", "")),
    "content-length": fc.constantFrom("0", "1", "100", "-1", "abc", "99999999999"),
    "accept-encoding": fc.constantFrom("gzip", "br", "identity;q=0", "*"),
  },
  { requiredKeys: [] },
);

function headersPart(operation: DocumentedOperation): PartArbitraries<Record<string, string>> {
  const json = operation.bodySchema === undefined ? undefined : "application/json";
  const assemble = (authorization?: string, contentType?: string, others = {}) => ({
    ...others,
    ...(authorization === undefined ? {} : { authorization }),
    ...(contentType === undefined ? {} : { "content-type": contentType }),
  });
  return {
    valid: fc.constant(assemble(`Bearer ${tokens.all}`, json)),
    hostile: fc
      .record({
        authorization: fc.oneof(fc.constant(`Bearer ${tokens.all}`), hostileAuthorization),
        contentType: fc.oneof(fc.constant(json), hostileContentType),
        others: fc.option(otherHeaders, { nil: undefined }),
      })
      .map(({ authorization, contentType, others }) =>
        assemble(authorization, contentType, others),
      ),
  };
}

function bodyPart(operation: DocumentedOperation): PartArbitraries<BodyCase | undefined> {
  if (operation.bodySchema === undefined) {
    // A body on a read means nothing, whatever it holds.
    return {
      valid: fc.constant(undefined),
      hostile: fc.constantFrom<BodyCase>(
        { kind: "on a read", payload: '{"a":1}' },
        { kind: "on a read", payload: "{" },
      ),
    };
  }
  return bodyPayloads(document, operation.bodySchema, hints, t.config.bodyLimitBytes);
}

/**
 * Requests with no, one, or every part hostile: a case that spoils one part reaches the check of
 * that part with the others passing, and the valid cases reach the operation itself.
 */
const FOCUSES: { hostile: Part[]; weight: number }[] = [
  { hostile: [], weight: 2 },
  { hostile: ["path"], weight: 1 },
  { hostile: ["query"], weight: 1 },
  { hostile: ["headers"], weight: 1 },
  { hostile: ["body"], weight: 3 },
  { hostile: ["path", "query", "headers", "body"], weight: 2 },
];

function requestCases(operation: DocumentedOperation): fc.Arbitrary<FuzzCase> {
  const parts = {
    path: pathPart(operation.template),
    query: queryPart(operation),
    headers: headersPart(operation),
    body: bodyPart(operation),
  };
  const pick = <T>(part: PartArbitraries<T>, hostile: boolean) =>
    hostile ? part.hostile : part.valid;
  const cases = FOCUSES.map(({ hostile, weight }) => ({
    weight,
    arbitrary: fc
      .record({
        path: pick(parts.path, hostile.includes("path")),
        query: pick(parts.query, hostile.includes("query")),
        headers: pick(parts.headers, hostile.includes("headers")),
        body: pick(parts.body, hostile.includes("body")),
      })
      .map(({ path, query, headers, body }) => {
        const fuzzCase: FuzzCase = {
          method: operation.method,
          url: `/api/v1${path}${query}`,
          headers,
          ...(body === undefined ? {} : { body }),
          hostile,
        };
        // A counterexample may hold megabytes: reports show it cut short.
        return Object.assign(fuzzCase, { [fc.toStringMethod]: () => describeCase(fuzzCase) });
      }),
  }));
  return fc.oneof(...cases);
}

const cut = (text: string, length = 300) =>
  text.length > length ? `${text.slice(0, length)}… (${text.length} characters)` : text;

function describeCase(c: FuzzCase): string {
  const headers = Object.fromEntries(
    Object.entries(c.headers).map(([name, value]) => [name, cut(value, 120)]),
  );
  const body =
    c.body === undefined ? "no body" : `${c.body.kind} body ${JSON.stringify(cut(c.body.payload))}`;
  const hostile = c.hostile.length === 0 ? "nothing hostile" : `hostile ${c.hostile.join(", ")}`;
  return `${c.method} ${cut(c.url)} (${hostile}) headers ${JSON.stringify(headers)}, ${body}`;
}

// --- what may come back -------------------------------------------------------------------------

/**
 * One row per table: how many rows and the newest row version (`xmin`), which moves with any
 * insert, update or delete that commits. Token rows are compared without `last_used_at`, which
 * a request that authenticates touches.
 */
const tableStates = Object.values(schema as Record<string, unknown>)
  .filter((value): value is PgTable => is(value, PgTable))
  .map((table) => {
    const name = getTableName(table);
    const state =
      name === "api_tokens"
        ? `md5(coalesce(string_agg((to_jsonb(r) - 'last_used_at')::text, ',' order by r.id), ''))`
        : `coalesce(max(r.xmin::text::bigint), 0)::text`;
    return `select '${name}' as name, count(*)::text || '/' || ${state} as state from "${name}" r`;
  })
  .join(" union all ");

async function snapshot() {
  const rows = rowsOf<{ name: string; state: string }>(await t.db.execute(sql.raw(tableStates)));
  return {
    tables: Object.fromEntries(rows.map((row) => [row.name, row.state])),
    queued: counting.enqueued(),
  };
}

async function send(c: FuzzCase): Promise<ApiResponse> {
  const started = performance.now();
  const res = await answerOrTimeout(c);
  // Work that blocks the event loop keeps the timer from firing: the clock tells.
  const elapsed = performance.now() - started;
  if (elapsed > ANSWER_WITHIN_MS) {
    throw new Error(`answered only after ${Math.round(elapsed)} ms, blocking the process`);
  }
  return res;
}

async function answerOrTimeout(c: FuzzCase): Promise<ApiResponse> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${ANSWER_WITHIN_MS} ms`)),
      ANSWER_WITHIN_MS,
    );
  });
  try {
    // Through the suite's `api`, which also checks the body against the served document.
    return await Promise.race([
      api(t.app, c.method, c.url, {
        headers: c.headers,
        ...(c.body === undefined ? {} : { payload: c.body.payload }),
      }),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function expectDocumentedAnswer(operation: DocumentedOperation, res: ApiResponse, label: string) {
  const documented = Object.keys(operation.operation.responses ?? {});
  expect(res.status, `${label}: a server error`).toBeLessThan(500);
  expect(
    documented,
    `${label}: answered ${res.status}, which ${operation.name} does not document`,
  ).toContain(String(res.status));
  expect(res.headers["content-type"], `${label}: not JSON`).toMatch(/^application\/json/);
  if (res.status === 200) {
    expect(res.body?.ok, `${label}: success without ok:true`).toBe(true);
    return;
  }
  expect(res.body, `${label}: not the failure envelope`).toEqual({
    ok: false,
    error: expect.any(String),
    message: expect.any(String),
  });
  expect(
    STATUS_OF_CODE[res.body.error],
    `${label}: code ${res.body.error} with status ${res.status}`,
  ).toBe(res.status);
}

/** Ids the fuzzed creates answered with, by the path parameter that names them. */
const created = new Map<string, string[]>();

/**
 * Whether the answer is to a create (a POST to a collection answering an id the URL does not
 * hold: minutes answer with their meeting's); keeps the id.
 */
function rememberCreated(operation: DocumentedOperation, url: string, res: ApiResponse): boolean {
  const collection = /\/([a-z]+)s$/.exec(operation.template)?.[1];
  const id = res.body?.data?.id;
  if (operation.method !== "POST" || collection === undefined || typeof id !== "string") {
    return false;
  }
  if (url.toLowerCase().includes(id)) return false;
  const name = `${collection}_id`;
  created.set(name, [...(created.get(name) ?? []), id]);
  return true;
}

/** Every valid combination of `template`'s path parameters: fixtures and what the run created. */
function reachablePaths(template: string): string[] {
  const names = [...template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
  return names.reduce(
    (paths, name) =>
      paths.flatMap((path) =>
        [...(known[name]?.reachable ?? []), ...(created.get(name) ?? [])].map((value) =>
          path.replace(`{${name}}`, encodeURIComponent(value)),
        ),
      ),
    [template],
  );
}

// --- the properties -------------------------------------------------------------------------------

describe(`every documented operation, fuzzed (FUZZ_SEED=${SEED})`, () => {
  it("covers the whole document", () => {
    expect(operations.length).toBeGreaterThanOrEqual(20);
    for (const operation of operations) {
      for (const [, name] of operation.template.matchAll(/\{([^}]+)\}/g)) {
        expect(known[name!], `${operation.name}: no fixture values for {${name}}`).toBeDefined();
      }
    }
  });

  for (const operation of operations) {
    const isRead = operation.method === "GET";
    it(operation.name, async () => {
      const seen = new Map<number, number>();
      // Nothing writes between two cases, so one case's "after" is the next one's "before".
      let settled: Awaited<ReturnType<typeof snapshot>> | undefined;
      const property = fc.asyncProperty(requestCases(operation), async (c) => {
        const label = describeCase(c);
        const before = settled ?? (await snapshot());
        settled = undefined;
        let res: ApiResponse;
        try {
          res = await send(c);
        } catch (error) {
          throw new Error(`${label}: ${(error as Error).message}`, { cause: error });
        }
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expectDocumentedAnswer(operation, res, label);
        const after = await snapshot();
        settled = after;
        if (isRead || res.status !== 200) {
          expect(
            after,
            `${label}: answered ${res.status} but changed the database or queue`,
          ).toEqual(before);
        } else if (rememberCreated(operation, c.url, res)) {
          // Keeps the snapshot honest: a create that answered 200 shows in it.
          expect(after, `${label}: created, yet no table changed`).not.toEqual(before);
        }
      });
      try {
        await fc.assert(property, {
          seed: SEED,
          numRuns: isRead ? RUNS.read : RUNS.write,
          endOnFailure: !SHRINK,
          ...(PATH === undefined ? {} : { path: PATH }),
        });
      } catch (error) {
        throw new Error(
          `Replay the run: FUZZ_SEED=${SEED} npx vitest run test/http/fuzz.test.ts; only this case: add FUZZ_PATH=<path below> -t "${operation.name}"\n${(error as Error).message}`,
          { cause: error },
        );
      }
      // Some requests get through: the generators reach the operation itself, not just its guards.
      expect([...seen.keys()], `${operation.name} answered only ${[...seen.keys()]}`).toContain(
        200,
      );
    });
  }

  // Last, so that the fuzzed writes have stored whatever they could: every read of every
  // reachable path answers with its documented body.
  it("reads back what the fuzzed writes stored", async () => {
    const withoutTranscript = rover.meetings[1]!.id;
    for (const operation of operations.filter((candidate) => candidate.method === "GET")) {
      for (const path of reachablePaths(operation.template)) {
        const c: FuzzCase = {
          method: "GET",
          url: `/api/v1${path}`,
          headers: { authorization: `Bearer ${tokens.all}` },
          hostile: [],
        };
        const label = describeCase(c);
        const res = await send(c);
        expectDocumentedAnswer(operation, res, label);
        const expected = path.endsWith(`${withoutTranscript}/transcript`) ? 404 : 200;
        expect(res.status, label).toBe(expected);
      }
    }
  });
});

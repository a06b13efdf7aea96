import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/client.js";
import { openPglite } from "../../src/db/embedded.js";
import { tasks } from "../../src/db/schema/index.js";
import { createInProcessQueue } from "../../src/queue/in-process-queue.js";
import type { WorkspaceJobs } from "../../src/queue/jobs.js";
import {
  addonReturnUrl,
  importOAuthWorkspaces,
  memberIdOf,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { api } from "../support/api.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { InjectSession } from "../support/browser.js";
import { importFixture, mintToken, workspaceDocument } from "../support/fixtures.js";
import { redeemCode } from "../support/tokens.js";

const logger = pino({ level: "silent" });
const queue = createInProcessQueue<WorkspaceJobs>(logger);
let database: Database;
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  database = await openPglite(undefined);
  await database.migrate();
  const config = loadConfig({
    NODE_ENV: "test",
    SECRET_KEY: TEST_SECRET_KEY,
    PUBLIC_URL: "http://localhost:3000",
  });
  app = await buildApp({ config, database, logger, queue });
});
afterAll(async () => {
  await app?.close();
  await queue.close();
  await database?.close();
});

/** The embedded mode (PGlite) runs the same session store, consent, token and idempotency code. */
it("signs in, approves twice into one grant and redeems both codes on PGlite", async () => {
  const fixtures = await importOAuthWorkspaces(database.db);
  const redirectUri = "https://addon.example/cb";
  const client = await registerClient(database.db, fixtures.devco, [redirectUri]);
  const session = new InjectSession(app);
  await session.signIn("admin@acme.example", PASSWORD);
  for (const scope of ["projects:read", "tasks:read"]) {
    const params = {
      client_id: client.clientId,
      redirect_uri: redirectUri,
      response_type: "code",
      scope,
      state: "s",
    };
    const page = await session.get(`/oauth/authorize?${new URLSearchParams(params)}`);
    const _csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const organizationId = /name="organization_id" value="([^"]+)"/.exec(page.body)?.[1] as string;
    const approved = await session.post("/oauth/authorize", {
      ...params,
      _csrf,
      member_id: memberIdOf(page.body),
      organization_id: organizationId,
      decision: "approve",
    });
    const code = addonReturnUrl(approved).searchParams.get("code") as string;
    const token = await redeemCode(app, {
      code,
      redirectUri,
      clientId: client.clientId,
      clientSecret: client.clientSecret as string,
    });
    expect(token.statusCode, token.body).toBe(200);
    expect(token.json().scope).toBe(scope);
  }
  const connections = await session.get("/admin/acme/connections");
  expect(connections.body.match(/\/revoke"/g)).toHaveLength(1);
  expect(connections.body).toContain("<code>projects:read</code>");
  expect(connections.body).toContain("<code>tasks:read</code>");
});

it("replays a POST retried with its Idempotency-Key on PGlite", async () => {
  const ws = await importFixture(
    database.db,
    workspaceDocument("embedded-idem", {
      projects: [{ slug: "rover", name: "Rover", status: "active", visibility: "org" }],
    }),
  );
  const token = await mintToken(database.db, ws);
  const send = () =>
    api(app, "POST", "/api/v1/projects/rover/tasks", {
      token,
      body: { title: "Once on PGlite" },
      headers: { "idempotency-key": "embedded-retry" },
    });
  const first = await send();
  const retry = await send();
  expect(first.status).toBe(200);
  expect(retry.headers["idempotent-replayed"]).toBe("true");
  expect(retry.raw).toBe(first.raw);
  expect(await database.db.$count(tasks)).toBe(1);
});

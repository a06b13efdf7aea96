import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  importOAuthWorkspaces,
  issueCode,
  PASSWORD,
  registerClient,
} from "../oauth/oauth-fixtures.js";
import { type ServedApp, serveTestApp } from "../support/browser.js";

const STRANGER = "127.0.0.2";
const VICTIM = "127.0.0.3";
const REDIRECT = "https://addon.example/callback";

type Answer = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
};

/** A real HTTP request from a chosen loopback address, as a client on another host sends it. */
function send(
  served: ServedApp,
  from: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${served.url}${path}`, { method, headers, localAddress: from }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Signs in from `from` with a session and CSRF token of its own. */
async function signIn(served: ServedApp, from: string, email: string, password: string) {
  const page = await send(served, from, "GET", "/login");
  const cookie = (page.headers["set-cookie"] as string[])
    .map((line) => line.split(";")[0])
    .join("; ");
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? "";
  const form = new URLSearchParams({ _csrf: csrf, email, password }).toString();
  return send(
    served,
    from,
    "POST",
    "/login",
    {
      cookie,
      "content-type": "application/x-www-form-urlencoded",
    },
    form,
  );
}

let served: ServedApp;
let workspaces: Awaited<ReturnType<typeof importOAuthWorkspaces>>;

beforeAll(async () => {
  served = await serveTestApp({ AUTH_RATE_LIMIT_MAX: "5" });
  workspaces = await importOAuthWorkspaces(served.db);
});
afterAll(() => served.close());

describe("a stranger guessing from another address", () => {
  it("cannot stop an admin's right password from signing in", async () => {
    for (let i = 0; i < 10; i++) {
      const guess = await signIn(served, STRANGER, "ADMIN@acme.example", `wrong ${i}`);
      expect([401, 429]).toContain(guess.status);
    }
    // The stranger's own address is refused by now…
    expect((await signIn(served, STRANGER, "admin@acme.example", PASSWORD)).status).toBe(429);
    // …but the admin, elsewhere, is only slowed down.
    const admin = await signIn(served, VICTIM, "admin@acme.example", PASSWORD);
    expect(admin.status).toBe(303);
    expect(admin.headers.location).toBe("/admin");
  });

  it("cannot stop an addon's right secret from getting a token", async () => {
    const client = await registerClient(served.db, workspaces.devco, [REDIRECT]);
    const code = await issueCode(served.db, {
      clientRecordId: client.id,
      organization: workspaces.acme,
      redirectUri: REDIRECT,
      scopes: ["projects:read"],
    });
    const exchange = (from: string, secret: string) =>
      send(
        served,
        from,
        "POST",
        "/api/v1/oauth/token",
        { "content-type": "application/x-www-form-urlencoded" },
        new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: REDIRECT,
          client_id: client.clientId,
          client_secret: secret,
        }).toString(),
      );
    for (let i = 0; i < 8; i++) {
      expect([401, 429]).toContain((await exchange(STRANGER, `svcs_wrong${i}`)).status);
    }
    const addon = await exchange(VICTIM, client.clientSecret as string);
    expect(addon.status).toBe(200);
    expect(JSON.parse(addon.body).access_token).toMatch(/^svc_live_/);
  });
});

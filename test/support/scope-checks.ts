import { expect } from "vitest";
import { allScopes, type Scope } from "../../src/core/scopes.js";
import { type ApiResponse, api } from "./api.js";
import type { TestApp } from "./app.js";
import { mintToken, type Workspace } from "./fixtures.js";

type Method = Parameters<typeof api>[1];

/** A token of the workspace's first user with every scope of `candidates` except `scope`. */
export function tokenWithout(
  t: TestApp,
  workspace: Workspace,
  scope: Scope,
  candidates: readonly Scope[] = allScopes,
): Promise<string> {
  return mintToken(
    t.db,
    workspace,
    candidates.filter((candidate) => candidate !== scope),
  );
}

/** Refused with 403 for a scope the token lacks, whatever else is wrong with the request. */
export function expectInsufficientScope(res: ApiResponse): void {
  expect(res.status).toBe(403);
  expect(res.body.error).toBe("insufficient_scope");
}

/**
 * The request answers 401 without a token, then 403 with a token holding every scope but
 * `scope`. Returns that token, for checks of what else it cannot do.
 */
export async function expectTokenThenScope(
  t: TestApp,
  workspace: Workspace,
  scope: Scope,
  method: Method,
  url: string,
  body?: unknown,
): Promise<string> {
  expect((await api(t.app, method, url, { body })).status).toBe(401);
  const others = await tokenWithout(t, workspace, scope);
  expectInsufficientScope(await api(t.app, method, url, { token: others, body }));
  return others;
}

import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import { type ApiResponse, api } from "./api.js";

/** The one 404 body every hidden or unknown resource answers with. */
export const NOT_FOUND_BODY = { ok: false, error: "not_found", message: "Not found" } as const;

/**
 * A private project, another organisation's project and two that never existed, one of them
 * longer than the 100 characters Fastify allows a path parameter by default.
 */
export const HIDDEN_PROJECT_SLUGS = [
  "secret",
  "foreign",
  "never-existed",
  "x".repeat(300),
] as const;

/**
 * Sends one request per target, all at once, and checks that each answers 404 with one and the
 * same body, so that a caller cannot tell a private target from a foreign or unknown one.
 * Returns that body as sent.
 */
export async function expectOneNotFoundBody(
  targets: readonly string[],
  request: (target: string) => Promise<ApiResponse>,
): Promise<string> {
  const bodies = await Promise.all(
    targets.map(async (target) => {
      const res = await request(target);
      expect(res.status).toBe(404);
      return res.raw;
    }),
  );
  expect(new Set(bodies).size).toBe(1);
  return bodies[0] ?? "";
}

/**
 * GET `/api/v1/projects/{slug}{suffix}` answers a private, a foreign and an unknown project
 * with the same not_found envelope.
 */
export async function expectHiddenProjectsNotFound(
  app: FastifyInstance,
  token: string,
  suffix: string,
): Promise<void> {
  const body = await expectOneNotFoundBody(HIDDEN_PROJECT_SLUGS, (slug) =>
    api(app, "GET", `/api/v1/projects/${slug}${suffix}`, { token }),
  );
  expect(JSON.parse(body)).toMatchObject({ ok: false, error: "not_found" });
}

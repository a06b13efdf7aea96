import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { Db } from "../db/client.js";
import { authenticateToken, type TokenPrincipal } from "../modules/tokens/service.js";
import { InsufficientScope, InvalidRequest, InvalidToken } from "./errors.js";
import type { Scope } from "./scopes.js";

/** Who may call a route: anyone, any valid token, or a token holding one scope. */
export type RouteAccess = "public" | "any-token" | Scope;

declare module "fastify" {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    principal: TokenPrincipal | null;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

// One lookup per request, whether the rate limiter or the route's access check asks first.
const bearerLookups = new WeakMap<FastifyRequest, Promise<TokenPrincipal | null>>();

/** The principal of the request's bearer token; null when it is missing, malformed or not live. */
export function bearerPrincipalOf(db: Db, request: FastifyRequest): Promise<TokenPrincipal | null> {
  let lookup = bearerLookups.get(request);
  if (lookup === undefined) {
    const match = BEARER.exec(request.headers.authorization ?? "");
    lookup = match?.[1] === undefined ? Promise.resolve(null) : authenticateToken(db, match[1]);
    bearerLookups.set(request, lookup);
  }
  return lookup;
}

async function authenticateRequest(db: Db, request: FastifyRequest): Promise<TokenPrincipal> {
  const principal = await bearerPrincipalOf(db, request);
  if (principal !== null) return principal;
  throw BEARER.test(request.headers.authorization ?? "")
    ? new InvalidToken("The bearer token is unknown, revoked or expired")
    : new InvalidToken();
}

/**
 * Runs before body parsing so the spec's order holds: 401, then 403, then validation. It is
 * added to each route after the rate limiter's own per-route hook, so refused requests still
 * count against the budget and carry the RateLimit headers. Routes without `access` (the
 * not-found handler) stay open so unknown paths are 404.
 */
export function registerBearerAuth(app: FastifyInstance, db: Db): void {
  app.decorateRequest("principal", null);
  app.addHook("onRoute", (route) => {
    const access = route.config?.access;
    if (access === undefined || access === "public") return;
    const requireToken: onRequestAsyncHookHandler = async (request) => {
      const principal = await authenticateRequest(db, request);
      if (access !== "any-token" && !principal.scopes.includes(access)) {
        throw new InsufficientScope(access);
      }
      request.principal = principal;
    };
    route.onRequest = [...toArray(route.onRequest), requireToken];
  });
}

function toArray<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

export function principalOf(request: FastifyRequest): TokenPrincipal {
  if (request.principal === null) throw new InvalidToken();
  return request.principal;
}

/** The user a write is attributed to; a token whose creator left may only read. */
export function authorOf(request: FastifyRequest): { principal: TokenPrincipal; authorId: string } {
  const principal = principalOf(request);
  if (principal.authorId === null) {
    throw new InvalidRequest(
      "No author stands behind this token: its creator is no longer a member of the organisation, so it can only read. Mint a new token.",
    );
  }
  return { principal, authorId: principal.authorId };
}

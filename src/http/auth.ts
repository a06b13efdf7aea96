import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import { InsufficientScope, InvalidRequest, InvalidToken } from "../core/errors.js";
import type { Actor, Principal } from "../core/principal.js";
import type { Scope } from "../core/scopes.js";
import { withHookAfter } from "./route-hooks.js";

/** Who may call a route: anyone, any valid token, or a token holding one scope. */
export type RouteAccess = "public" | "any-token" | Scope;

/** Resolves a presented bearer token to its principal; null when it is not a live token. */
export type AuthenticateBearer = (token: string) => Promise<Principal | null>;

/** The principal behind a request's bearer token, looked up at most once per request. */
export type BearerLookup = (request: FastifyRequest) => Promise<Principal | null>;

declare module "fastify" {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The bearer token the request presents, as presented; null without one. */
export function presentedBearer(request: FastifyRequest): string | null {
  return BEARER.exec(request.headers.authorization ?? "")?.[1] ?? null;
}

/** One lookup per request, whether the rate limiter or the route's access check asks first. */
export function bearerLookup(authenticate: AuthenticateBearer): BearerLookup {
  const lookups = new WeakMap<FastifyRequest, Promise<Principal | null>>();
  return (request) => {
    let lookup = lookups.get(request);
    if (lookup === undefined) {
      const token = presentedBearer(request);
      lookup = token === null ? Promise.resolve(null) : authenticate(token);
      lookups.set(request, lookup);
    }
    return lookup;
  };
}

async function authenticateRequest(
  lookup: BearerLookup,
  request: FastifyRequest,
): Promise<Principal> {
  const principal = await lookup(request);
  if (principal !== null) return principal;
  if (BEARER.test(request.headers.authorization ?? "")) {
    request.server.metrics.countAuthFailure("invalid_token");
    throw new InvalidToken("The bearer token is unknown, revoked or expired");
  }
  request.server.metrics.countAuthFailure("missing_token");
  throw new InvalidToken();
}

/**
 * Runs before body parsing so the spec's order holds (401, 403, then validation), and after the
 * rate limiter's hook so refused requests still count. Routes without `access` (the not-found
 * handler) stay open so unknown paths are 404.
 */
export function registerBearerAuth(app: FastifyInstance, lookup: BearerLookup): void {
  app.decorateRequest("principal", null);
  app.addHook("onRoute", (route) => {
    const access = route.config?.access;
    if (access === undefined || access === "public") return;
    const requireToken: onRequestAsyncHookHandler = async (request) => {
      const principal = await authenticateRequest(lookup, request);
      if (access !== "any-token" && !principal.scopes.includes(access)) {
        request.server.metrics.countAuthFailure("insufficient_scope");
        throw new InsufficientScope(access);
      }
      request.principal = principal;
    };
    route.onRequest = withHookAfter(route.onRequest, requireToken);
  });
}

export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new InvalidToken();
  return request.principal;
}

/** The organisation of the request's token. */
export function organizationOf(request: FastifyRequest): string {
  return principalOf(request).organization.id;
}

/** The actor a write by this request acts as; a token whose creator left may only read. */
export function writerOf(request: FastifyRequest): Actor {
  const principal = principalOf(request);
  if (principal.authorId === null) {
    throw new InvalidRequest(
      "No author stands behind this token: its creator is no longer a member of the organisation, so it can only read. Mint a new token.",
    );
  }
  return {
    organizationId: principal.organization.id,
    authorId: principal.authorId,
    traceContext: request.traceContext,
  };
}

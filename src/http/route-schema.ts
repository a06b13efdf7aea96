import type { z } from "zod";
import type { RouteAccess } from "./auth.js";
import { failureEnvelope, successEnvelope } from "./envelope.js";

type Failure = typeof failureEnvelope;

type RouteDefinition<
  D extends z.ZodType,
  P extends z.ZodType | undefined,
  Q extends z.ZodType | undefined,
  B extends z.ZodType | undefined,
> = {
  access: RouteAccess;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** The `data` of the success envelope. */
  data: D;
  params?: P;
  querystring?: Q;
  body?: B;
};

const failureResponses = {
  401: failureEnvelope.describe(
    "invalid_token: the bearer token is missing, malformed, revoked or expired",
  ),
  403: failureEnvelope.describe("insufficient_scope: the token lacks the scope of this operation"),
  404: failureEnvelope.describe(
    "not_found: unknown path or id, or a project that is private or not in this organisation",
  ),
  400: failureEnvelope.describe(
    "invalid_request: the path could not be decoded, the query or body failed validation, or the write was refused; `message` names the cause",
  ),
  429: failureEnvelope.describe(
    "rate_limited: too many requests on this token; honour Retry-After",
  ),
  503: failureEnvelope.describe(
    "unavailable: the database cannot be reached or is too slow right now; honour Retry-After",
  ),
} satisfies Record<number, Failure>;

/**
 * Declares a route's access, schemas and documented responses together, so that validation,
 * serialization, the scope check and the OpenAPI document all come from this one place.
 */
export function apiRoute<
  D extends z.ZodType,
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(definition: RouteDefinition<D, P, Q, B>) {
  const { access, data, params, querystring, body, ...documentation } = definition;
  const authenticated = access !== "public";
  const requiredScopes = access === "public" || access === "any-token" ? [] : [access];
  // Either a minted bearer token or an OAuth-issued one, holding the operation's scope.
  const security: Record<string, string[]>[] = [
    { bearerAuth: requiredScopes },
    { oauth2: requiredScopes },
  ];
  // Absent parts stay absent: Fastify warns about keys that hold undefined.
  const requestParts = Object.fromEntries(
    Object.entries({ params, querystring, body }).filter(([, schema]) => schema !== undefined),
  );
  return {
    config: { access },
    schema: {
      ...documentation,
      security: authenticated ? security : [],
      ...(requestParts as { params: P; querystring: Q; body: B }),
      response: {
        200: successEnvelope(data).describe("Success"),
        ...(authenticated ? { 401: failureResponses[401] } : {}),
        ...(authenticated && access !== "any-token" ? { 403: failureResponses[403] } : {}),
        // A path parameter comes from the URL, which can be malformed (an escape that does not
        // decode, a parameter past the router's length limit): that is a 400 before routing.
        ...(params !== undefined || querystring !== undefined || body !== undefined
          ? { 400: failureResponses[400] }
          : {}),
        ...(params !== undefined || body !== undefined ? { 404: failureResponses[404] } : {}),
        ...(authenticated ? { 429: failureResponses[429], 503: failureResponses[503] } : {}),
      },
    },
  };
}

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import {
  ApiError,
  type ErrorCode,
  InsufficientScope,
  InvalidToken,
  ServiceUnavailable,
  statusOfError,
} from "../core/errors.js";
import { isDatabaseUnavailable, malformedValueColumn } from "../db/failures.js";
import { QueueUnavailable } from "../queue/queue.js";
import type { FailureBody } from "./envelope.js";

type ValidationIssue = {
  instancePath: string;
  message: string;
  keyword: string;
  params: Record<string, unknown>;
};

const contextNames: Record<string, string> = { querystring: "query", body: "body", params: "path" };

// A body can fail on any number of fields, each named by the caller: the message lists a few,
// each name cut short, so a hostile body cannot make the answer as large as itself.
const LISTED_PROBLEMS = 10;
const FIELD_NAME_CHARACTERS = 100;

function fieldName(path: string): string {
  return path.length > FIELD_NAME_CHARACTERS ? `${path.slice(0, FIELD_NAME_CHARACTERS)}…` : path;
}

/** One line per failing field, e.g. `title: Too big: expected string to have <=200 characters`. */
function describeValidationIssue(issue: ValidationIssue, context: string): string[] {
  const path = issue.instancePath.slice(1).replaceAll("/", ".");
  const keys = issue.params.keys;
  if (issue.keyword === "unrecognized_keys" && Array.isArray(keys)) {
    const prefix = path === "" ? "" : `${path}.`;
    return keys.map((key) => `${fieldName(`${prefix}${String(key)}`)}: unknown field`);
  }
  return [`${fieldName(path) || (contextNames[context] ?? context)}: ${issue.message}`];
}

function describeValidationIssues(issues: ValidationIssue[], context: string): string {
  const problems = issues.flatMap((issue) => describeValidationIssue(issue, context));
  const listed = problems.slice(0, LISTED_PROBLEMS).join("; ");
  const unlisted = problems.length - LISTED_PROBLEMS;
  return unlisted > 0 ? `${listed}; and ${unlisted} more` : listed;
}

function fromFastifyError(error: FastifyError, bodyLimit: number): ApiError | null {
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError(
        "invalid_request",
        `Request body is too large (the limit is ${bodyLimit} bytes)`,
      );
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError("invalid_request", "Content-Type must be application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ApiError("invalid_request", "body: a JSON body is required");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError("invalid_request", "body: malformed JSON");
    default:
      break;
  }
  // The JSON parser's SyntaxError reaches us as a plain 400 error.
  if (error instanceof SyntaxError || (error.statusCode === 400 && error.name === "SyntaxError")) {
    return new ApiError("invalid_request", "body: malformed JSON");
  }
  return null;
}

/**
 * A failed dependency call the client should hear about: a value zod let through but Postgres
 * cannot store (NUL bytes, out-of-range dates or numbers) is the caller's bad input; a database
 * or job queue that cannot serve now is a 503 to retry. Anything else is ours, and stays a 500.
 */
export function fromDependencyError(error: unknown): ApiError | null {
  if (isDatabaseUnavailable(error)) return new ServiceUnavailable();
  if (error instanceof QueueUnavailable) {
    return new ServiceUnavailable("The service cannot reach its job queue right now");
  }
  const column = malformedValueColumn(error);
  if (column === null) return null;
  return new ApiError(
    "invalid_request",
    `${column === "" ? "" : `${column}: `}a value is malformed or out of range`,
  );
}

/** A request that failed its route's schema: which part failed, and a message naming each field. */
export type SchemaRefusal = { part: string; message: string };

export function schemaRefusalOf(error: unknown): SchemaRefusal | null {
  if (!hasZodFastifySchemaValidationErrors(error)) return null;
  const part = error.validationContext ?? "body";
  const issues = error.validation as unknown as ValidationIssue[];
  return { part, message: describeValidationIssues(issues, part) };
}

function toApiError(error: FastifyError, bodyLimit: number): ApiError | null {
  if (error instanceof ApiError) return error;
  const fromDependency = fromDependencyError(error);
  if (fromDependency !== null) return fromDependency;
  const refusal = schemaRefusalOf(error);
  if (refusal !== null) return new ApiError("invalid_request", refusal.message);
  return fromFastifyError(error, bodyLimit);
}

function authenticateHeader(error: ApiError): string | null {
  if (error instanceof InvalidToken) return 'Bearer realm="api", error="invalid_token"';
  if (error instanceof InsufficientScope) {
    return `Bearer realm="api", error="insufficient_scope", scope="${error.scope}"`;
  }
  return null;
}

export function failure(code: ErrorCode, message: string): FailureBody {
  return { ok: false, error: code, message };
}

/** The one place errors become responses; 5xx never carry the underlying message. */
export function registerErrorHandler(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler(async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error, bodyLimit);
    if (apiError === null) {
      request.log.error({ err: error }, "unhandled error");
      return reply
        .code(statusOfError.internal_error)
        .send(failure("internal_error", "Internal server error"));
    }
    const challenge = authenticateHeader(apiError);
    if (challenge !== null) reply.header("WWW-Authenticate", challenge);
    if (apiError instanceof ServiceUnavailable) {
      request.log.warn({ err: error }, "service unavailable");
      reply.header("Retry-After", String(apiError.retryAfterSeconds));
    }
    return reply.code(apiError.statusCode).send(failure(apiError.code, apiError.message));
  });
}

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { RateLimited, ServiceUnavailable } from "../core/errors.js";
import { fromDependencyError } from "../http/error-handler.js";
import { TokenError } from "./errors.js";

/** Every refusal of the token endpoint as an OAuth error object (RFC 6749 §5.2). */
export function answerTokenError(
  error: FastifyError | TokenError,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  reply.header("Cache-Control", "no-store").header("Pragma", "no-cache");
  if (error instanceof TokenError) {
    if (error.basicChallenge && error.statusCode === 401) {
      reply.header("WWW-Authenticate", 'Basic realm="workspace", charset="UTF-8"');
    }
    if (error.retryAfterSeconds !== null)
      reply.header("Retry-After", String(error.retryAfterSeconds));
    return reply
      .code(error.statusCode)
      .send({ error: error.code, error_description: error.message });
  }
  if (error instanceof RateLimited) {
    return reply.code(429).send({ error: "rate_limited", error_description: error.message });
  }
  const fromDatabase = error instanceof ServiceUnavailable ? error : fromDependencyError(error);
  if (fromDatabase instanceof ServiceUnavailable) {
    request.log.warn({ err: error }, "unavailable at the token endpoint");
    return reply
      .code(503)
      .header("Retry-After", String(fromDatabase.retryAfterSeconds))
      .send({ error: "temporarily_unavailable", error_description: fromDatabase.message });
  }
  if (fromDatabase !== null) {
    return reply
      .code(400)
      .send({ error: "invalid_request", error_description: fromDatabase.message });
  }
  if (error.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return reply.code(400).send({
      error: "invalid_request",
      error_description: "Content-Type must be application/x-www-form-urlencoded",
    });
  }
  if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
    request.log.info({ err: error }, "token request refused before the handler");
    return reply.code(400).send({
      error: "invalid_request",
      error_description:
        error.code === "FST_ERR_CTP_BODY_TOO_LARGE"
          ? "The body is too large"
          : "The request could not be read",
    });
  }
  request.log.error({ err: error }, "unhandled error at the token endpoint");
  return reply
    .code(500)
    .send({ error: "server_error", error_description: "Internal server error" });
}

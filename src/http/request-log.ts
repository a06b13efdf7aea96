import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from "fastify";

/** Query parameters whose values are credentials: never written to the log. */
const SECRET_PARAMETERS = new Set([
  "client_secret",
  "code",
  "code_verifier",
  "token",
  "access_token",
]);
// A name encoded twice or more is still caught; past this many rounds nothing decodes it either.
const DECODE_ROUNDS = 3;

/**
 * The request URL as it may be logged: the values of secret parameters replaced. Names are
 * compared decoded and in any case (`client%5Fsecret`, `Access_Token`), as the parser reads them.
 */
export function loggableUrl(url: string): string {
  const start = url.indexOf("?");
  if (start === -1) return url;
  const hash = url.indexOf("#", start);
  const end = hash === -1 ? url.length : hash;
  const pairs = url
    .slice(start + 1, end)
    .split("&")
    .map(redactPair);
  return `${url.slice(0, start + 1)}${pairs.join("&")}${url.slice(end)}`;
}

function redactPair(pair: string): string {
  const equals = pair.indexOf("=");
  if (equals === -1) return pair;
  const name = pair.slice(0, equals);
  return isSecretName(name) ? `${name}=[redacted]` : pair;
}

function isSecretName(raw: string): boolean {
  let name = raw;
  for (let round = 0; round <= DECODE_ROUNDS; round++) {
    if (SECRET_PARAMETERS.has(name.toLowerCase())) return true;
    const decoded = decodeName(name);
    if (decoded === name) return false;
    name = decoded;
  }
  return false;
}

/** One round of form decoding; a malformed escape leaves the rest decoded, as lenient parsers do. */
function decodeName(name: string): string {
  return name.replaceAll("+", " ").replace(/(?:%[0-9a-fA-F]{2})+/g, (escapes) => {
    try {
      return decodeURIComponent(escapes);
    } catch {
      return escapes;
    }
  });
}

/**
 * One line per answered request instead of Fastify's two. A success holds only plain values, so
 * it skips the redaction paths; an error may carry anything, so it keeps them
 * (docs/architecture.md, "Request log").
 */
export class RequestLog extends LogController {
  private readonly completed: FastifyBaseLogger;

  constructor(logger: FastifyBaseLogger) {
    super();
    this.completed = logger.child({}, { redact: { paths: [] } });
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = {
      method: request.method,
      url: loggableUrl(request.url),
      statusCode: reply.statusCode,
      responseTime: Math.round(reply.elapsedTime),
    };
    if (error) reply.log.error({ ...line, err: error }, "request errored");
    else this.completed.info({ reqId: request.id, ...line }, "request completed");
  }
}

import type { LightMyRequestResponse } from "fastify";

/** What a caller can observe of an answer, with what differs between any two requests removed. */
export type ComparableAnswer = {
  status: number;
  headers: Record<string, string>;
  body: string;
};

// Headers that differ between two requests whatever they asked: the request id, the clock, the
// rate-limit budget as it is spent, the session cookie and the connection.
const PER_REQUEST_HEADERS = new Set([
  "x-request-id",
  "date",
  "ratelimit-remaining",
  "ratelimit-reset",
  "set-cookie",
  "connection",
  "keep-alive",
]);

const CSRF_FIELD = /name="_csrf" value="[^"]*"/g;

/**
 * The answer with its request id taken out wherever it appears (the X-Request-Id header, and a
 * body or header that repeats it), each page's fresh CSRF token blanked, and each `echoed`
 * value (the id or slug the caller sent, which an answer may repeat back) replaced by its name,
 * so two answers compare equal exactly when a caller could not tell them apart.
 */
export function comparableAnswer(
  response: LightMyRequestResponse,
  echoed: Record<string, string> = {},
): ComparableAnswer {
  const requestId = String(response.headers["x-request-id"] ?? "");
  const replacements: [string, string][] = [
    ...(requestId === "" ? [] : [[requestId, "{request id}"] as [string, string]]),
    ...Object.entries(echoed).map(([name, value]): [string, string] => [value, `{${name}}`]),
  ];
  const blank = (text: string) =>
    replacements
      .reduce((current, [value, name]) => current.replaceAll(value, name), text)
      .replace(CSRF_FIELD, 'name="_csrf" value="{csrf}"');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (PER_REQUEST_HEADERS.has(name) || value === undefined) continue;
    headers[name] = blank(Array.isArray(value) ? value.join(", ") : String(value));
  }
  return { status: response.statusCode, headers, body: blank(response.body) };
}

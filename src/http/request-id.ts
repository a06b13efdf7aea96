import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

// A caller's id is echoed only when it is short and plain, so it cannot forge log lines.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers["x-request-id"];
  return typeof sent === "string" && ACCEPTABLE_REQUEST_ID.test(sent) ? sent : randomUUID();
}

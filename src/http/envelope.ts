import type { FastifyReply } from "fastify";
import { z } from "zod";
import { errorCode } from "../core/errors.js";
import type { JsonText } from "../db/json-rows.js";

export const failureEnvelope = z
  .object({
    ok: z.literal(false),
    error: errorCode,
    message: z.string().optional(),
  })
  .meta({ id: "Failure", description: "Every failure under /api/v1 has this body." });

export type FailureBody = z.infer<typeof failureEnvelope>;

export function successEnvelope<T extends z.ZodType>(data: T) {
  return z.object({ ok: z.literal(true), data });
}

export function ok<T>(data: T): { ok: true; data: T } {
  return { ok: true, data };
}

/** The success envelope around data that Postgres wrote as JSON text, sent without parsing it. */
export function sendJsonData<T>(reply: FastifyReply, data: JsonText<T>): FastifyReply {
  return reply.type("application/json; charset=utf-8").send(`{"ok":true,"data":${data}}`);
}

import { createHash } from "node:crypto";
import { and, eq, lt, sql } from "drizzle-orm";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { stringify } from "safe-stable-stringify";
import { z } from "zod";
import { Conflict, InvalidRequest } from "../core/errors.js";
import type { Db } from "../db/client.js";
import { idempotencyKeys } from "../db/schema/index.js";
import type { RouteAccess } from "./auth.js";
import { failureEnvelope } from "./envelope.js";
import { withHookAfter } from "./route-hooks.js";

const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
const REPLAYED_HEADER = "Idempotent-Replayed";
const KEY_LIFETIME = "24 hours";
/**
 * A request that ran this long without its answer being stored died with its process: its key
 * is free again. Far longer than any request may run (statement and request timeouts).
 */
const ABANDONED_AFTER = "5 minutes";
const PURGE_EVERY_MS = 10 * 60 * 1000;

const headers = z.looseObject({
  [IDEMPOTENCY_KEY_HEADER]: z.string().min(1).max(255).optional().meta({
    description:
      "Makes the POST safe to retry: the same key from the same token with the same request within 24 hours answers the first response again (with `Idempotent-Replayed: true`) instead of writing twice. 1 to 255 characters.",
  }),
});

const conflictResponse = failureEnvelope.describe(
  "conflict: a request with the same Idempotency-Key is still running; retry once it has finished",
);

type Claim = { tokenId: string; key: string };

declare module "fastify" {
  interface FastifyRequest {
    /** The Idempotency-Key this request holds while it runs, whose answer is stored. */
    idempotencyClaim: Claim | null;
  }
}

/** Method, route, path and body: a retry must be the same request, down to the body's values. */
function fingerprintOf(request: FastifyRequest): string {
  return createHash("sha256")
    .update(`${request.method} ${request.url}\n${stringify(request.body ?? null)}`)
    .digest("base64url");
}

/**
 * Takes the key for this request: a new key, an expired one, or one whose request was
 * abandoned. Null when another request holds it.
 */
async function claimKey(db: Db, claim: Claim, fingerprint: string): Promise<boolean> {
  const taken = await db
    .insert(idempotencyKeys)
    .values({ ...claim, fingerprint, expiresAt: sql`now() + ${KEY_LIFETIME}::interval` })
    .onConflictDoUpdate({
      target: [idempotencyKeys.tokenId, idempotencyKeys.key],
      set: {
        fingerprint,
        responseStatus: null,
        responseContentType: null,
        responseBody: null,
        createdAt: sql`now()`,
        expiresAt: sql`now() + ${KEY_LIFETIME}::interval`,
      },
      setWhere: sql`${idempotencyKeys.expiresAt} <= now() or (${idempotencyKeys.responseStatus} is null and ${idempotencyKeys.createdAt} < now() - ${ABANDONED_AFTER}::interval)`,
    })
    .returning({ key: idempotencyKeys.key });
  return taken.length > 0;
}

function keyRow(db: Db, claim: Claim) {
  return db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.tokenId, claim.tokenId), eq(idempotencyKeys.key, claim.key)));
}

async function claimOrReplay(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER];
  if (typeof key !== "string" || request.principal === null) return;
  const claim = { tokenId: request.principal.tokenId, key };
  const fingerprint = fingerprintOf(request);
  const db = request.server.db;
  if (await claimKey(db, claim, fingerprint)) {
    request.idempotencyClaim = claim;
    return;
  }
  const [held] = await keyRow(db, claim);
  // Gone between the two statements (expired and purged): take it again.
  if (held === undefined) return claimOrReplay(request, reply);
  if (held.fingerprint !== fingerprint) {
    throw new InvalidRequest(
      "Idempotency-Key: this key was already used with another request; send a new key for a new request",
    );
  }
  if (held.responseStatus === null) {
    throw new Conflict(
      "Idempotency-Key: a request with this key is still running; retry once it has finished",
    );
  }
  request.server.metrics.countIdempotencyReplay();
  return reply
    .code(held.responseStatus)
    .header(REPLAYED_HEADER, "true")
    .type(held.responseContentType ?? "application/json; charset=utf-8")
    .send(held.responseBody);
}

/**
 * Keeps the answer of a request that ran (a 2xx, or a 4xx the write itself decided) for its
 * retries. A 5xx frees the key instead, so a later retry can still succeed.
 */
async function settleClaim(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  const claim = request.idempotencyClaim;
  if (claim === null) return payload;
  request.idempotencyClaim = null;
  const where = and(eq(idempotencyKeys.tokenId, claim.tokenId), eq(idempotencyKeys.key, claim.key));
  try {
    if (reply.statusCode >= 500 || typeof payload !== "string") {
      await request.server.db.delete(idempotencyKeys).where(where);
    } else {
      const contentType = reply.getHeader("content-type");
      await request.server.db
        .update(idempotencyKeys)
        .set({
          responseStatus: reply.statusCode,
          responseContentType: typeof contentType === "string" ? contentType : null,
          responseBody: payload,
        })
        .where(where);
    }
  } catch (error) {
    // The answer still goes out; the key stays held until it counts as abandoned.
    request.log.warn({ err: error, key: claim.key }, "idempotency key not settled");
  }
  return payload;
}

async function purgeExpiredKeys(app: FastifyInstance): Promise<void> {
  try {
    await app.db.delete(idempotencyKeys).where(lt(idempotencyKeys.expiresAt, sql`now()`));
  } catch (error) {
    app.log.warn({ err: error }, "expired idempotency keys not purged");
  }
}

/**
 * `Idempotency-Key` on every authenticated POST (Stripe's semantics): declared in the route's
 * schema, so it is validated and documented, and claimed after validation, so a request refused
 * by validation stores nothing.
 */
export function registerIdempotency(app: FastifyInstance): void {
  app.decorateRequest("idempotencyClaim", null);
  app.addHook("onRoute", (route) => {
    const access = route.config?.access as RouteAccess | undefined;
    if (route.method !== "POST" || access === undefined || access === "public") return;
    const schema = (route.schema ?? {}) as {
      headers?: unknown;
      response?: Record<number, unknown>;
    };
    route.schema = {
      ...schema,
      headers,
      response: { ...schema.response, 409: conflictResponse },
    };
    route.preHandler = withHookAfter(route.preHandler, claimOrReplay);
    route.onSend = withHookAfter(route.onSend, settleClaim);
  });
  const purge = setInterval(() => void purgeExpiredKeys(app), PURGE_EVERY_MS);
  purge.unref();
  app.addHook("onClose", async () => clearInterval(purge));
}

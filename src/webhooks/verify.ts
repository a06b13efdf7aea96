import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Webhook signatures (spec, "Events"): `X-Service-Signature: sha256=<hex>` where hex is the
 * HMAC-SHA256, keyed with the signing secret, of `{timestamp}.{raw_body}`.
 * This module is exported by the package for receivers: `workspace-service/verify-webhook`.
 */

const SIGNATURE_TOLERANCE_SECONDS = 300;

export function computeSignature(
  secret: string,
  timestamp: number | string,
  rawBody: Buffer | string,
): string {
  const hmac = createHmac("sha256", secret);
  hmac.update(`${timestamp}.`);
  hmac.update(rawBody);
  return `sha256=${hmac.digest("hex")}`;
}

export type VerifyWebhookInput = {
  secret: string;
  /** The exact bytes received, before any JSON parsing. */
  rawBody: Buffer | string;
  /** The `X-Service-Timestamp` header. */
  timestamp: string | undefined;
  /** The `X-Service-Signature` header. */
  signature: string | undefined;
  toleranceSeconds?: number;
  /** Milliseconds since the epoch; for tests. */
  now?: number;
};

export type VerifyWebhookResult =
  | { ok: true }
  | { ok: false; reason: "missing_headers" | "timestamp_out_of_tolerance" | "signature_mismatch" };

/**
 * The receiver's obligations 1 and 2: a constant-time signature comparison over the raw body,
 * and a timestamp within five minutes of now in either direction (a future timestamp fails too).
 */
export function verifyWebhookSignature(input: VerifyWebhookInput): VerifyWebhookResult {
  const { timestamp, signature } = input;
  if (timestamp === undefined || signature === undefined || !/^\d+$/.test(timestamp)) {
    return { ok: false, reason: "missing_headers" };
  }
  const nowSeconds = Math.floor((input.now ?? Date.now()) / 1000);
  const tolerance = input.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
    return { ok: false, reason: "timestamp_out_of_tolerance" };
  }
  const expected = Buffer.from(computeSignature(input.secret, timestamp, input.rawBody));
  const received = Buffer.from(signature);
  if (expected.length !== received.length || !timingSafeEqual(expected, received)) {
    return { ok: false, reason: "signature_mismatch" };
  }
  return { ok: true };
}

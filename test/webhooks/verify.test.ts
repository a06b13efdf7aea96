import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { computeSignature, verifyWebhookSignature } from "../../src/webhooks/verify.js";

const secret = "whsec_test";
const rawBody = Buffer.from('{"id":1,"type":"task.created"}');
const now = 1_800_000_000_000;
const timestamp = String(now / 1000);

describe("verifyWebhookSignature", () => {
  const signature = computeSignature(secret, timestamp, rawBody);

  it("computes sha256=<hex of HMAC-SHA256(secret, '{timestamp}.{raw_body}')>", () => {
    const hex = createHmac("sha256", secret)
      .update(`${timestamp}.${rawBody.toString()}`)
      .digest("hex");
    expect(signature).toBe(`sha256=${hex}`);
  });

  it("accepts a matching signature within five minutes either way", () => {
    for (const skew of [0, 300_000, -300_000]) {
      expect(
        verifyWebhookSignature({ secret, rawBody, timestamp, signature, now: now + skew }),
      ).toEqual({ ok: true });
    }
  });

  it("refuses timestamps more than five minutes off, in the past or the future", () => {
    for (const skew of [301_000, -301_000]) {
      expect(
        verifyWebhookSignature({ secret, rawBody, timestamp, signature, now: now + skew }),
      ).toEqual({
        ok: false,
        reason: "timestamp_out_of_tolerance",
      });
    }
  });

  it("refuses a changed body, another secret, or a malformed signature", () => {
    const cases = [
      { secret, rawBody: Buffer.from('{"id":2}'), signature },
      { secret: "whsec_other", rawBody, signature },
      { secret, rawBody, signature: "sha256=abc" },
      { secret, rawBody, signature: signature.toUpperCase() },
    ];
    for (const input of cases) {
      expect(verifyWebhookSignature({ ...input, timestamp, now })).toEqual({
        ok: false,
        reason: "signature_mismatch",
      });
    }
  });

  it("refuses missing headers", () => {
    expect(
      verifyWebhookSignature({ secret, rawBody, timestamp: undefined, signature, now }),
    ).toMatchObject({ ok: false });
    expect(
      verifyWebhookSignature({ secret, rawBody, timestamp, signature: undefined, now }),
    ).toMatchObject({ ok: false });
    expect(
      verifyWebhookSignature({ secret, rawBody, timestamp: "12abc", signature, now }),
    ).toMatchObject({ ok: false });
  });
});

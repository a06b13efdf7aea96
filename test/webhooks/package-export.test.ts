import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { computeSignature } from "../../src/webhooks/verify.js";
import { ROOT } from "../support/cli.js";

describe("the receiver's helper exported by the package", () => {
  it("imports as workspace-service/verify-webhook and verifies a delivery", () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const body = '{"id":1}';
    const signature = computeSignature("whsec_x", timestamp, body);
    const script = `
      import { verifyWebhookSignature } from "workspace-service/verify-webhook";
      const good = verifyWebhookSignature({ secret: "whsec_x", rawBody: Buffer.from(${JSON.stringify(body)}), timestamp: "${timestamp}", signature: "${signature}" });
      const bad = verifyWebhookSignature({ secret: "whsec_y", rawBody: Buffer.from(${JSON.stringify(body)}), timestamp: "${timestamp}", signature: "${signature}" });
      console.log(JSON.stringify([good, bad]));`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual([
      { ok: true },
      { ok: false, reason: "signature_mismatch" },
    ]);
  });
});

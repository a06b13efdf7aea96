import { z } from "zod";
import { EXAMPLE_ID, id } from "../core/values.js";

export const pingInputSchema = z
  .strictObject({ webhook_id: id.describe("A webhook registered by this organisation") })
  .meta({ id: "WebhookPing", examples: [{ webhook_id: EXAMPLE_ID }] });

const pingStatus = z
  .enum(["queued"])
  .describe(
    "`queued`: the synthetic `change.created` delivery is recorded and queued; its outcome appears in the webhook's delivery log.",
  );

export const pingResultSchema = z.object({ status: pingStatus }).meta({ id: "WebhookPingResult" });

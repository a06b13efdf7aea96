import type { Config } from "../../config.js";
import type { Db } from "../../db/client.js";
import { createLogger } from "../../logger.js";
import { operatorAudit } from "../../modules/audit/service.js";
import {
  type AttemptReport,
  createDeliveryPipeline,
  type DeliveryPipeline,
} from "../../webhooks/delivery.js";
import {
  type ClaimedRetry,
  type RetryScope,
  reviveExhaustedDeliveries,
  runRetryPass,
} from "../../webhooks/retry-pass.js";
import {
  createWebhook,
  deleteWebhook,
  findWebhook,
  lastAnswerText,
  listDeliveries,
  listWebhooks,
  recordRedelivery,
  registrationSettingsOf,
  rotateWebhookSecret,
  setWebhookEnabled,
  updateWebhook,
} from "../../webhooks/service.js";
import { webhookNetworkOf } from "../../webhooks/url-policy.js";
import { parseCommandArgs, requireIdOption, requireOption } from "../args.js";
import { CliError, UsageError } from "../cli-error.js";
import { requireOrganizationId, withDatabase } from "../context.js";
import { jsonArrayPrinter, printJson, printLine } from "../output.js";

/** Runs `use` with a delivery pipeline of its own, closed when it is done. */
async function withDeliveryPipeline<T>(
  db: Db,
  config: Config,
  use: (pipeline: DeliveryPipeline) => Promise<T>,
): Promise<T> {
  const pipeline = createDeliveryPipeline({ db, config, logger: createLogger(config.logLevel, 2) });
  try {
    return await use(pipeline);
  } finally {
    await pipeline.close();
  }
}

function describeAttempt(report: AttemptReport): string {
  const { outcome } = report;
  const result = outcome.ok ? `delivered (HTTP ${outcome.statusCode})` : `failed: ${outcome.error}`;
  return `${report.deliveryId}: ${result}; now ${report.status}`;
}

/** `--events a,b` or `--events all`, as registration takes them. */
function eventList(option: string): string[] {
  return option.split(",").map((type) => type.trim());
}

async function create(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    org: { type: "string" },
    url: { type: "string" },
    events: { type: "string" },
    json: { type: "boolean" },
  });
  const orgSlug = requireOption(values.org, "org");
  const url = requireOption(values.url, "url");
  const events = eventList(requireOption(values.events, "events"));
  const created = await withDatabase(async (db, config) =>
    createWebhook(db, operatorAudit, registrationSettingsOf(config), {
      organizationId: await requireOrganizationId(db, orgSlug),
      url,
      events,
    }),
  );
  if (values.json) return printJson(created);
  printLine(`Webhook ${created.id} registered. Signing secret (shown once): ${created.secret}`);
}

async function list(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { org: { type: "string" }, json: { type: "boolean" } });
  const orgSlug = requireOption(values.org, "org");
  const webhooks = await withDatabase(async (db) =>
    listWebhooks(db, await requireOrganizationId(db, orgSlug)),
  );
  if (values.json) {
    return printJson(
      webhooks.map((webhook) => ({
        id: webhook.id,
        url: webhook.url,
        events: webhook.events,
        enabled: webhook.enabled,
        heldDeliveries: webhook.heldDeliveries,
        exhaustedDeliveries: webhook.exhaustedDeliveries,
        lastDelivery: webhook.lastDelivery,
        last24Hours: webhook.last24Hours,
      })),
    );
  }
  for (const webhook of webhooks) {
    const state = webhook.enabled
      ? webhook.pausedUntil === null
        ? "enabled"
        : `enabled, paused until ${webhook.pausedUntil}`
      : `disabled (${webhook.disabledReason ?? "by an admin"}), ${webhook.heldDeliveries} held`;
    const last = webhook.lastDelivery;
    const lastText =
      last === null
        ? "no delivery yet"
        : `last ${last.status} (${lastAnswerText(last)}) ${last.lastAttemptAt ?? last.createdAt}`;
    const day = webhook.last24Hours;
    const rate = day.successRate === null ? "-" : `${Math.round(day.successRate * 100)}%`;
    printLine(
      `${webhook.id}  ${webhook.url}  ${state}  ${lastText}  24h ${rate} of ${day.delivered + day.failed}  ${webhook.exhaustedDeliveries} exhausted  ${webhook.events.join(",")}`,
    );
  }
}

async function update(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    id: { type: "string" },
    url: { type: "string" },
    events: { type: "string" },
    json: { type: "boolean" },
  });
  const id = requireIdOption(values.id, "id", "a webhook");
  if (values.url === undefined && values.events === undefined) {
    throw new UsageError("webhook update needs --url, --events or both");
  }
  const events = values.events === undefined ? undefined : eventList(values.events);
  await withDatabase((db, config) =>
    updateWebhook(db, webhookNetworkOf(config), { id, url: values.url, events }),
  );
  if (values.json) return printJson({ id });
  printLine(`Webhook ${id} updated.`);
}

async function rotateSecret(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { id: { type: "string" }, json: { type: "boolean" } });
  const id = requireIdOption(values.id, "id", "a webhook");
  const rotated = await withDatabase((db, config) =>
    rotateWebhookSecret(db, operatorAudit, config.secretKey, { id }),
  );
  if (values.json) return printJson(rotated);
  printLine(
    `Webhook ${id}: new signing secret (shown once; every attempt from now on is signed with it): ${rotated.secret}`,
  );
}

async function remove(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { id: { type: "string" }, json: { type: "boolean" } });
  const id = requireIdOption(values.id, "id", "a webhook");
  const dropped = await withDatabase((db) => deleteWebhook(db, { id }));
  if (values.json) return printJson({ id, droppedDeliveries: dropped });
  printLine(
    `Webhook ${id} deleted; dropped ${dropped.due} due and ${dropped.held} held deliveries.`,
  );
}

async function toggle(args: string[], enabled: boolean): Promise<void> {
  const { values } = parseCommandArgs(args, { id: { type: "string" }, json: { type: "boolean" } });
  const id = requireIdOption(values.id, "id", "a webhook");
  await withDatabase((db) => setWebhookEnabled(db, operatorAudit, { id, enabled }));
  if (values.json) return printJson({ id, enabled });
  printLine(`Webhook ${id} ${enabled ? "enabled" : "disabled"}.`);
}

async function deliveries(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { id: { type: "string" }, json: { type: "boolean" } });
  const webhookId = requireIdOption(values.id, "id", "a webhook");
  const rows = await withDatabase((db) => listDeliveries(db, { webhookId }));
  if (values.json) {
    return printJson(
      rows.map(({ id, eventId, type, status, attempts }) => ({
        id,
        eventId,
        type,
        status,
        attempts,
      })),
    );
  }
  for (const row of rows) {
    const last = row.lastStatusCode ?? row.lastError ?? "not attempted";
    printLine(
      `${row.id}  event ${row.eventId}  ${row.type}  ${row.status}  attempts ${row.attempts}  last: ${last}`,
    );
  }
}

/** Sends now, with the same code as the worker: same delivery id, fresh timestamp and signature. */
async function redeliver(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    delivery: { type: "string" },
    json: { type: "boolean" },
  });
  const deliveryId = requireIdOption(values.delivery, "delivery", "a delivery");
  const report = await withDatabase(async (db, config) => {
    await recordRedelivery(db, operatorAudit, { deliveryId });
    return withDeliveryPipeline(db, config, (pipeline) =>
      pipeline.attemptDelivery(deliveryId, "manual"),
    );
  });
  if (report === null) throw new CliError(`Delivery ${deliveryId} could not be attempted`);
  if (values.json)
    return printJson({
      id: deliveryId,
      status: report.status,
      statusCode: report.outcome.statusCode,
      error: report.outcome.error,
    });
  printLine(describeAttempt(report));
}

/** Runs `send` over `items` with at most `concurrency` in flight. */
async function sendAll<T>(
  items: T[],
  concurrency: number,
  send: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let item = items[next++]; item !== undefined; item = items[next++]) await send(item);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}

/**
 * The daily pass, now: claims in Postgres a batch at a time, then attempts each delivery with
 * the worker's concurrency, printing each outcome as it comes. `--include-exhausted` takes the
 * deliveries the passes gave up on back first. `--org` and `--webhook` narrow both to theirs.
 */
async function retryFailed(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    org: { type: "string" },
    webhook: { type: "string" },
    json: { type: "boolean" },
    "include-exhausted": { type: "boolean" },
  });
  const webhookId =
    values.webhook === undefined
      ? undefined
      : requireIdOption(values.webhook, "webhook", "a webhook");
  const json = values.json ? jsonArrayPrinter() : undefined;
  let retried = 0;
  await withDatabase(async (db, config) => {
    const scope: RetryScope = {
      organizationId:
        values.org === undefined ? undefined : await requireOrganizationId(db, values.org),
      webhookId,
    };
    // A webhook of another organisation is refused rather than silently matching nothing.
    if (webhookId !== undefined) await findWebhook(db, webhookId, scope.organizationId);
    if (values["include-exhausted"]) await reviveExhaustedDeliveries(db, scope);
    const retryOne =
      (pipeline: DeliveryPipeline) =>
      async ({ id }: ClaimedRetry) => {
        const report = await pipeline.attemptDelivery(id, "pass");
        if (report === null) return;
        retried++;
        if (json === undefined) return printLine(`  ${describeAttempt(report)}`);
        json.item({
          id: report.deliveryId,
          status: report.status,
          statusCode: report.outcome.statusCode,
          error: report.outcome.error,
        });
      };
    await withDeliveryPipeline(db, config, (pipeline) =>
      runRetryPass(
        db,
        config.webhooks,
        (batch) => sendAll(batch, config.workerConcurrency, retryOne(pipeline)),
        scope,
      ),
    );
  });
  if (json !== undefined) return json.end();
  printLine(`Retried ${retried} deliveries.`);
}

export async function webhookCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case "create":
      return create(rest);
    case "list":
      return list(rest);
    case "update":
      return update(rest);
    case "rotate-secret":
      return rotateSecret(rest);
    case "delete":
      return remove(rest);
    case "enable":
      return toggle(rest, true);
    case "disable":
      return toggle(rest, false);
    case "deliveries":
      return deliveries(rest);
    case "redeliver":
      return redeliver(rest);
    case "retry-failed":
      return retryFailed(rest);
    default:
      throw new UsageError(
        "webhook needs create, list, update, rotate-secret, delete, enable, disable, deliveries, redeliver or retry-failed",
      );
  }
}

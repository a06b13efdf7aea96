/**
 * The most characters (Unicode code points) of one text field a diff carries. Two such fields
 * take at most 192 KiB even with every character escaped, which keeps a webhook payload under
 * WEBHOOK_PAYLOAD_MAX_BYTES whatever a page holds.
 */
export const DIFF_TEXT_MAX_CHARS = 16_384;

/** The largest delivery body (docs/webhooks.md). */
export const WEBHOOK_PAYLOAD_MAX_BYTES = 256 * 1024;

/**
 * Every change event the service records (the webhook outbox) and what its diff holds. Webhooks
 * subscribe to exactly these types; the OpenAPI description and the docs print this table.
 */
export const changeEventCatalogue = [
  {
    type: "page.created",
    action: "created",
    targetKind: "page",
    diff: "before `{}`; after `{title, parentId, text}`",
  },
  {
    type: "page.updated",
    action: "updated",
    targetKind: "page",
    diff: "the changed fields among `title`, `text` (none when only the body's formatting changed)",
  },
  {
    type: "document.created",
    action: "created",
    targetKind: "document",
    diff: "before `{}`; after `{category, kind, title, description, url}`",
  },
  {
    type: "document.updated",
    action: "updated",
    targetKind: "document",
    diff: "the changed fields among `title`, `description`",
  },
  {
    type: "task.created",
    action: "created",
    targetKind: "task",
    diff: "before `{}`; after `{title, description, status, priority, start_date, due_date, blocked_reason, assigned_to}`",
  },
  {
    type: "task.updated",
    action: "updated",
    targetKind: "task",
    diff: "the changed TaskPatch fields",
  },
  {
    type: "meeting.minutes_updated",
    action: "minutes_updated",
    targetKind: "meeting",
    diff: "`minutesText` (plain text) before and after (none when only the formatting changed)",
  },
  {
    type: "meeting.notes_updated",
    action: "notes_updated",
    targetKind: "meeting",
    diff: "the changed fields among `notes`, `notesSource`, `notesStatus`",
  },
  {
    type: "spec.published",
    action: "published",
    targetKind: "specification",
    diff: "`{value}` of the previous latest published version (`null` before the first) and of the new one",
  },
  {
    type: "component.published",
    action: "published",
    targetKind: "component",
    diff: "`{version, status, lifecycleStage, healthStatus}` of the previous latest published version (`{}` for the first) and of the new one",
  },
  {
    type: "change.created",
    action: "created",
    targetKind: "webhook",
    diff: "before `{}`, after `{}`: the synthetic delivery `POST /webhooks/ping` sends",
  },
] as const;

export type ChangeEventType = (typeof changeEventCatalogue)[number]["type"];

export function catalogueEntry(type: ChangeEventType) {
  const entry = changeEventCatalogue.find((candidate) => candidate.type === type);
  if (entry === undefined) throw new Error(`${type} is not in the change-event catalogue`);
  return entry;
}

/** How a diff stays bounded, for the OpenAPI description and docs/webhooks.md. */
function boundedDiffSentence(): string {
  return `A text field longer than ${DIFF_TEXT_MAX_CHARS} characters (Unicode code points) is cut there, and \`<field>Truncated: true\`, \`<field>Length\` (its full length in characters) and \`<field>Sha256\` (hex SHA-256 of its full UTF-8) are added beside it, so a payload never passes ${WEBHOOK_PAYLOAD_MAX_BYTES} bytes (256 KiB).`;
}

/** The change-event section of the OpenAPI description. */
export function changeEventsAsMarkdown(): string {
  const rows = changeEventCatalogue.map(
    (entry) =>
      `| \`${entry.type}\` | \`${entry.action}\` | \`${entry.targetKind}\` | ${entry.diff} |`,
  );
  return [
    "## Change events",
    "",
    "Every write that changes something records one change event in the same transaction; an",
    "update that changes nothing records none (each write operation says exactly what it records).",
    "Webhooks deliver the events. The payload carries `id` (integer), `type`, `action`,",
    "`target_kind`, `target_id`, `actor_id`, `occurred_at` and `diff` with `before` and `after`",
    "objects holding only the changed fields.",
    "",
    boundedDiffSentence(),
    "",
    "| type | action | target_kind | diff |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}

import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { Db } from "../../db/client.js";
import { assertRowReturned } from "../../db/returned-row.js";
import { changeEvents } from "../../db/schema/index.js";
import { type ChangeEventType, catalogueEntry, DIFF_TEXT_MAX_CHARS } from "./catalogue.js";

export type Diff = { before: Record<string, unknown>; after: Record<string, unknown> };

export type ChangeEventInput = {
  organizationId: string;
  /** Its action and target kind come from the catalogue, so they cannot drift from the docs. */
  type: ChangeEventType;
  targetId: string;
  actorId: string | null;
  diff: Diff;
  /** The W3C traceparent of the request that writes (tracing on), for its deliveries' links. */
  traceContext?: string | null;
};

/**
 * The outbox row of a write. Call it with the write's own transaction: the event exists
 * exactly when the write committed.
 */
export async function recordChangeEvent(tx: Db, event: ChangeEventInput): Promise<number> {
  const { action, targetKind } = catalogueEntry(event.type);
  const diff = { before: boundedFields(event.diff.before), after: boundedFields(event.diff.after) };
  const [row] = await tx
    .insert(changeEvents)
    .values({ ...event, diff, action, targetKind })
    .returning({ id: changeEvents.id });
  assertRowReturned(row, "change event insert");
  return row.id;
}

/** The fields that changed, each side holding only those fields. */
export function diffOf(before: Record<string, unknown>, after: Record<string, unknown>): Diff {
  const diff: Diff = { before: {}, after: {} };
  for (const key of Object.keys(after)) {
    if (isDeepStrictEqual(before[key], after[key])) continue;
    diff.before[key] = before[key] ?? null;
    diff.after[key] = after[key];
  }
  return diff;
}

/** No field changed: the update is a no-op and records nothing. */
export function isEmptyDiff(diff: Diff): boolean {
  return Object.keys(diff.after).length === 0;
}

export function creationDiff(after: Record<string, unknown>): Diff {
  return { before: {}, after };
}

/**
 * A text longer than DIFF_TEXT_MAX_CHARS is cut there, and `<field>Truncated: true`,
 * `<field>Length` (its length in characters) and `<field>Sha256` (hex, of its UTF-8) describe
 * the whole, so a receiver can still tell two versions apart.
 */
function boundedFields(fields: Record<string, unknown>): Record<string, unknown> {
  const bounded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    bounded[key] = value;
    // UTF-16 units are never fewer than characters: shorter strings need no counting.
    if (typeof value !== "string" || value.length <= DIFF_TEXT_MAX_CHARS) continue;
    const { length, cutAt } = measureCharacters(value, DIFF_TEXT_MAX_CHARS);
    if (length <= DIFF_TEXT_MAX_CHARS) continue;
    bounded[key] = value.slice(0, cutAt);
    bounded[`${key}Truncated`] = true;
    bounded[`${key}Length`] = length;
    bounded[`${key}Sha256`] = createHash("sha256").update(value).digest("hex");
  }
  return bounded;
}

/** The text's length in code points, and the UTF-16 index after its first `max` of them. */
function measureCharacters(text: string, max: number): { length: number; cutAt: number } {
  let length = 0;
  let cutAt = text.length;
  for (let index = 0; index < text.length; index++) {
    if (length === max) cutAt = index;
    length++;
    const unit = text.charCodeAt(index);
    const next = text.charCodeAt(index + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) index++;
  }
  return { length, cutAt };
}

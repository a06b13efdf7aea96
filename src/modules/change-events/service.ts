import { isDeepStrictEqual } from "node:util";
import type { Db } from "../../db/client.js";
import { changeEvents } from "../../db/schema/index.js";
import { type ChangeEventType, catalogueEntry } from "./catalogue.js";

export type Diff = { before: Record<string, unknown>; after: Record<string, unknown> };

export type ChangeEventInput = {
  organizationId: string;
  /** Its action and target kind come from the catalogue, so they cannot drift from the docs. */
  type: ChangeEventType;
  targetId: string;
  actorId: string | null;
  diff: Diff;
};

/**
 * The outbox row of a write. Call it with the write's own transaction: the event exists
 * exactly when the write committed.
 */
export async function recordChangeEvent(tx: Db, event: ChangeEventInput): Promise<number> {
  const { action, targetKind } = catalogueEntry(event.type);
  const [row] = await tx
    .insert(changeEvents)
    .values({ ...event, action, targetKind })
    .returning({ id: changeEvents.id });
  if (row === undefined) throw new Error("change event insert returned no row");
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

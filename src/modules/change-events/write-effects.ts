import type { ChangeEventType } from "./catalogue.js";

/**
 * What each API write records, in one table: the operation descriptions in the OpenAPI
 * document, the change-event section of docs/api.md and the tests all read these sentences, so
 * none of them can claim what the others contradict.
 */
type Creation = {
  kind: "creation";
  event: ChangeEventType;
  /** What else the write adds beside its row, in words. */
  alsoAdds?: string;
};

type Update = {
  kind: "update";
  event: ChangeEventType;
  /** What counts as changing nothing, in words. */
  unchanged: string;
  /** The timestamp an update moves, and a no-op leaves alone. */
  stamp: "updatedAt" | "minutesUpdatedAt" | null;
  /** Whether a change adds a page revision. */
  revision: boolean;
};

type Ping = { kind: "ping"; event: ChangeEventType };

type WriteEffect = Creation | Update | Ping;

export const writeEffects = {
  createPage: {
    kind: "creation",
    event: "page.created",
    alsoAdds: "the first revision, attributed to the token's user",
  },
  updatePage: {
    kind: "update",
    event: "page.updated",
    unchanged: "`{}`, or a title and body equal to the stored ones",
    stamp: "updatedAt",
    revision: true,
  },
  createTeamDocumentLink: { kind: "creation", event: "document.created" },
  createProjectDocumentLink: { kind: "creation", event: "document.created" },
  updateDocument: {
    kind: "update",
    event: "document.updated",
    unchanged: "`{}`, or values equal to the stored ones",
    stamp: "updatedAt",
    revision: false,
  },
  createTask: { kind: "creation", event: "task.created" },
  updateTask: {
    kind: "update",
    event: "task.updated",
    unchanged: "`{}`, or values equal to the stored ones",
    stamp: "updatedAt",
    revision: false,
  },
  writeMeetingMinutes: {
    kind: "update",
    event: "meeting.minutes_updated",
    unchanged: "minutes that come out equal to the stored ones",
    stamp: "minutesUpdatedAt",
    revision: false,
  },
  writeMeetingNotes: {
    kind: "update",
    event: "meeting.notes_updated",
    unchanged: "the stored notes again, already human-authored",
    stamp: null,
    revision: false,
  },
  pingWebhook: { kind: "ping", event: "change.created" },
} as const satisfies Record<string, WriteEffect>;

export type WriteOperation = keyof typeof writeEffects;

function describeCreation(effect: Creation): string {
  const also = effect.alsoAdds === undefined ? "" : `, and adds ${effect.alsoAdds},`;
  return `Records \`${effect.event}\`${also} in the same transaction.`;
}

function describeUpdate(effect: Update): string {
  const adds = effect.revision
    ? "adds a revision attributed to the token's user and records"
    : "records";
  const recordsNothing = `records ${effect.revision ? "no revision and no event" : "no event"}`;
  const outcome =
    effect.stamp === null
      ? `and ${recordsNothing}`
      : `${recordsNothing}, and leaves \`${effect.stamp}\` alone`;
  return (
    `A change ${adds} \`${effect.event}\`, whose diff holds only the fields that changed. ` +
    `An update that changes nothing (${effect.unchanged}) answers 200 with the usual body, ${outcome}.`
  );
}

/** The sentence every description of `operation` carries. */
export function describeWriteEffect(operation: WriteOperation): string {
  const effect: WriteEffect = writeEffects[operation];
  switch (effect.kind) {
    case "creation":
      return describeCreation(effect);
    case "update":
      return describeUpdate(effect);
    case "ping":
      return `Records \`${effect.event}\` addressed to this one webhook: no other webhook receives it.`;
  }
}

/** A route description ending with the operation's write effect. */
export function withWriteEffect(operation: WriteOperation, description: string): string {
  return `${description} ${describeWriteEffect(operation)}`;
}

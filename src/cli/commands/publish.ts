import {
  componentPublicationSchema,
  specPublicationSchema,
} from "../../modules/publishing/schemas.js";
import {
  type Published,
  publishComponentVersion,
  publishSpecVersion,
} from "../../modules/publishing/service.js";
import type { JsonValue } from "../../modules/specs/schemas.js";
import { parseCommandArgs, parseOptions, requireOption } from "../args.js";
import { UsageError } from "../cli-error.js";
import { withDatabase } from "../context.js";
import { printJson, printLine } from "../output.js";

const targetOptions = {
  org: { type: "string" },
  project: { type: "string" },
  version: { type: "string" },
  json: { type: "boolean" },
} as const;

/** The flag each publication field comes from, for refusals. */
const publicationFlags = {
  organizationSlug: "org",
  projectSlug: "project",
  specSlug: "spec",
  componentSlug: "component",
  version: "version",
  value: "value",
  lifecycleStage: "lifecycle-stage",
  healthStatus: "health",
};

function parseJsonValue(text: string, flag: string): JsonValue {
  try {
    // JSON.parse yields JSON values only.
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new UsageError(`--${flag} must be valid JSON (${(error as Error).message})`);
  }
}

function report(what: string, published: Published, json: boolean | undefined): void {
  if (json) {
    printJson({ id: published.id, eventId: published.eventId });
    return;
  }
  printLine(`Published ${what} (version id ${published.id}, change event ${published.eventId}).`);
  printLine(
    published.markedStale.length === 0
      ? "No dependent component was marked stale."
      : `Marked stale: ${published.markedStale.join(", ")}`,
  );
}

/** `svc spec publish`: the one way to publish a spec version (the API cannot). */
async function publishSpec(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    ...targetOptions,
    spec: { type: "string" },
    value: { type: "string" },
  });
  const publication = parseOptions(
    specPublicationSchema,
    {
      organizationSlug: requireOption(values.org, "org"),
      projectSlug: requireOption(values.project, "project"),
      specSlug: requireOption(values.spec, "spec"),
      version: requireOption(values.version, "version"),
      value: parseJsonValue(requireOption(values.value, "value"), "value"),
    },
    publicationFlags,
  );
  const published = await withDatabase((db) => publishSpecVersion(db, publication));
  report(`spec ${publication.specSlug} version ${publication.version}`, published, values.json);
}

/** `svc component publish`: the one way to publish a component version (the API cannot). */
async function publishComponent(args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, {
    ...targetOptions,
    component: { type: "string" },
    "lifecycle-stage": { type: "string" },
    health: { type: "string" },
  });
  const publication = parseOptions(
    componentPublicationSchema,
    {
      organizationSlug: requireOption(values.org, "org"),
      projectSlug: requireOption(values.project, "project"),
      componentSlug: requireOption(values.component, "component"),
      version: requireOption(values.version, "version"),
      lifecycleStage: requireOption(values["lifecycle-stage"], "lifecycle-stage"),
      healthStatus: requireOption(values.health, "health"),
    },
    publicationFlags,
  );
  const published = await withDatabase((db) => publishComponentVersion(db, publication));
  report(
    `component ${publication.componentSlug} version ${publication.version}`,
    published,
    values.json,
  );
}

export async function specCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "publish") return publishSpec(rest);
  throw new UsageError("spec needs publish");
}

export async function componentCommand(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === "publish") return publishComponent(rest);
  throw new UsageError("component needs publish");
}

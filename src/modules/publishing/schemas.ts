import { z } from "zod";
import { isStorableText, storableText, UNSTORABLE_TEXT } from "../../core/values.js";
import { componentHealth } from "../../db/schema/index.js";
import type { JsonValue } from "../specs/schemas.js";

/** A version string or lifecycle stage, stored as given: not empty, no space at either end. */
const publishingLabel = storableText
  .refine((value) => value.trim() !== "", { message: "must not be empty", abort: true })
  .refine((value) => value.trim() === value, "must not start or end with whitespace");

/** What jsonb can hold: finite numbers, and strings and keys without NUL or lone surrogates. */
function isStorableJson(value: unknown): value is JsonValue {
  if (value === null || typeof value === "boolean") return true;
  if (typeof value === "string") return isStorableText(value);
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isStorableJson);
  if (typeof value === "object") {
    return Object.entries(value).every(
      ([key, item]) => isStorableText(key) && isStorableJson(item),
    );
  }
  return false;
}

const storableJson = z.custom<JsonValue>(
  isStorableJson,
  `must be a JSON value with finite numbers, and strings that ${UNSTORABLE_TEXT}`,
);

const componentHealthSchema = z.enum(componentHealth.enumValues, {
  error: `must be one of ${componentHealth.enumValues.join(", ")}`,
});
export type ComponentHealth = z.output<typeof componentHealthSchema>;

const publisher = z.object({
  organizationSlug: z.string(),
  projectSlug: z.string(),
  /** The version string; a spec or component never has two versions with the same one. */
  version: publishingLabel,
  /** The member the change event names; null (or left out) when no user acts, as in the CLI. */
  actorId: z.string().nullish(),
});

/** What every publication names, once parsed. */
export type Publisher = z.output<typeof publisher>;

export const specPublicationSchema = publisher.extend({
  specSlug: z.string(),
  value: storableJson,
});
export type SpecPublication = z.input<typeof specPublicationSchema>;

/** A publish always creates a `published` version, so there is no status to choose. */
export const componentPublicationSchema = publisher.extend({
  componentSlug: z.string(),
  lifecycleStage: publishingLabel,
  healthStatus: componentHealthSchema,
});
export type ComponentPublication = z.input<typeof componentPublicationSchema>;

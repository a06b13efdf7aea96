import { z } from "zod";
import { isoDateTime } from "../../core/values.js";

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * Any JSON value: a spec version's value has no fixed shape. Spelled out rather than
 * `z.json()` so that the recursion refers to the named component itself (`z.json()`'s inner
 * references point at an unnamed definition the OpenAPI document does not contain).
 */
const jsonValueSchema: z.ZodType<JsonValue> = z
  .union([
    z.string(),
    z.number(),
    z.boolean(),
    z.null(),
    z.array(z.lazy(() => jsonValueSchema)),
    z.record(
      z.string(),
      z.lazy(() => jsonValueSchema),
    ),
  ])
  .meta({
    id: "JsonValue",
    description: "Any JSON value: null, boolean, number, string, array or object",
  });

const publishedSpecVersionSchema = z
  .object({
    version: z.string(),
    status: z.string().describe("Always `published`: drafts never appear on the API"),
    value: jsonValueSchema,
    publishedAt: isoDateTime.nullable(),
  })
  .meta({ id: "PublishedSpecVersion" });

export const specSchema = z
  .object({
    slug: z.string(),
    name: z.string(),
    kind: z.string().nullable(),
    units: z.string().nullable(),
    valueType: z.string().nullable(),
    latest: publishedSpecVersionSchema
      .nullable()
      .describe("The most recently published version, or null when none is published"),
  })
  .meta({ id: "Spec" });

export type Spec = z.infer<typeof specSchema>;

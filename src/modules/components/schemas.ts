import { z } from "zod";
import { componentHealth } from "../../db/schema/index.js";

const componentHealthSchema = z.enum(componentHealth.enumValues);

const publishedComponentVersionSchema = z
  .object({
    version: z.string(),
    status: z.string(),
    lifecycleStage: z.string(),
    healthStatus: componentHealthSchema,
  })
  .meta({ id: "PublishedComponentVersion" });

export const componentSchema = z
  .object({
    slug: z.string(),
    name: z.string(),
    kind: z.string().nullable(),
    latest: publishedComponentVersionSchema
      .nullable()
      .describe("The most recently published version, or null when none is published"),
  })
  .meta({ id: "Component" });

export type Component = z.infer<typeof componentSchema>;

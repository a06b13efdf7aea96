import { z } from "zod";
import { isoDate } from "../../core/values.js";

export const milestoneSchema = z
  .object({
    name: z.string(),
    kind: z.string(),
    status: z.string(),
    targetDate: isoDate,
    actualDate: isoDate.nullable(),
    description: z.string().nullable(),
  })
  .meta({ id: "Milestone" });

export type Milestone = z.infer<typeof milestoneSchema>;

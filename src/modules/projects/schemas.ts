import { z } from "zod";
import { id, isoDate } from "../../core/values.js";

export const projectSchema = z
  .object({
    slug: z.string(),
    name: z.string(),
    status: z.string(),
    visibility: z.enum(["org", "private"]).describe("Private projects are never returned"),
    description: z.string().nullable(),
    startDate: isoDate.nullable(),
    targetDate: isoDate.nullable(),
  })
  .meta({ id: "Project" });

export const projectDetailSchema = projectSchema
  .extend({ id: id.describe("The only response that carries a project id") })
  .meta({ id: "ProjectDetail" });

export type Project = z.infer<typeof projectSchema>;
export type ProjectDetail = z.infer<typeof projectDetailSchema>;

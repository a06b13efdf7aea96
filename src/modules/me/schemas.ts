import { z } from "zod";

export const meSchema = z
  .object({
    organization: z.object({ id: z.uuid(), slug: z.string(), name: z.string() }),
    scopes: z.array(z.string()).describe("The token's scopes"),
    pluginId: z
      .uuid()
      .nullable()
      .describe("For an OAuth-issued token, the id of the addon's client record; else null"),
  })
  .meta({ id: "Me" });

export type Me = z.infer<typeof meSchema>;

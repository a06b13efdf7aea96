import { z } from "zod";
import { id, isoDateTime, storableText } from "../../core/values.js";

// Spec, "Limits": page title max 200. An empty title would leave a nameless node in the tree.
const pageTitle = storableText.min(1).max(200);

export const pageSummarySchema = z
  .object({
    id,
    parentId: id.nullable().describe("Null for a top-level page"),
    title: z.string(),
    position: z.int().describe("Order among the page's siblings"),
    updatedAt: isoDateTime,
  })
  .meta({ id: "PageSummary" });

export const pageSchema = z
  .object({
    id,
    parentId: id.nullable(),
    title: z.string(),
    text: z.string().describe("The body flattened to plain text"),
    updatedAt: isoDateTime,
    updatedBy: id.nullable().describe("The user who last edited the page"),
  })
  .meta({ id: "Page" });

export const pageIdParams = z.object({ page_id: id });

export const createPageBody = z
  .strictObject({
    title: pageTitle,
    markdown: storableText
      .optional()
      .describe(
        "The body. Headings, bullet and numbered lists convert to rich text; tables and images stay as text. Absent: an empty page. Refused (400) when its conversion runs past MARKDOWN_TIMEOUT_MS (2 s by default) or the converted body would pass RICH_TEXT_MAX_BYTES (1 MiB of rich-text JSON by default).",
      ),
    parent_page_id: id
      .nullable()
      .optional()
      .describe("A page of the same project; omit (or null) for a top-level page"),
  })
  .meta({
    id: "PageCreate",
    examples: [
      {
        title: "Commissioning checklist",
        markdown: "## Before power-on\n\n- Check the emergency stop\n- Clear the work cell\n",
      },
    ],
  });

const pageWriteMode = z.enum(["replace", "append"]);

// No `.default()` here: an absent field must stay absent so that it is left alone.
export const updatePageBody = z
  .strictObject({
    title: pageTitle.optional(),
    markdown: storableText.optional().describe("The new content, converted like on create"),
    mode: pageWriteMode
      .optional()
      .describe(
        "How `markdown` is applied: `replace` (when absent) discards the current body, `append` adds below a divider. Only allowed together with `markdown`. The body after an append is held to RICH_TEXT_MAX_BYTES too.",
      ),
  })
  .superRefine((body, context) => {
    // A mode alone would change nothing; refusing tells the client its edit was incomplete.
    if (body.mode !== undefined && body.markdown === undefined) {
      context.addIssue({ code: "custom", path: ["mode"], message: "only allowed with markdown" });
    }
  })
  .meta({
    id: "PagePatch",
    examples: [{ markdown: "- Log the first cycle time\n", mode: "append" }],
  });

export const createdPageSchema = z.object({ id, title: z.string() }).meta({ id: "PageCreated" });

export const updatedPageSchema = z
  .object({ id, updatedAt: isoDateTime })
  .meta({ id: "PageUpdated" });

export type PageSummary = z.infer<typeof pageSummarySchema>;
export type Page = z.infer<typeof pageSchema>;
export type CreatePageInput = z.infer<typeof createPageBody>;
export type UpdatePageInput = z.infer<typeof updatePageBody>;
export type CreatedPage = z.infer<typeof createdPageSchema>;
export type UpdatedPage = z.infer<typeof updatedPageSchema>;

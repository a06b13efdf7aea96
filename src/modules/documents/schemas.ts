import { z } from "zod";
import { id, isoDateTime, isStorableText, storableText } from "../../core/values.js";
import { documentKind, documentCategory as storedCategory } from "../../db/schema/library.js";

// The database enums, so the API and the table cannot drift apart.
const documentCategory = z.enum(storedCategory.enumValues);

// Spec, "Limits": document (link) title max 200, description max 2000.
const documentTitle = storableText.min(1).max(200);
const documentDescription = storableText.max(2000);

// Spec: "absolute http(s) URL". The scheme check refuses `javascript:`, `ftp:`, `mailto:` and
// relative references. Surrounding whitespace (and tabs and newlines anywhere) is dropped by
// the URL check, as browsers do; other whitespace and control characters are refused.
const NOT_HTTP_URL = "must be an absolute http(s) URL";
// One message whichever check fails first: each check aborts the rest.
const linkUrl = z
  .url({ protocol: /^https?$/, error: NOT_HTTP_URL, abort: true })
  .regex(/^https?:\/\//i, { error: NOT_HTTP_URL, abort: true })
  .refine((url) => hasNoSpaceOrControl(url) && isStorableText(url), NOT_HTTP_URL)
  .meta({ format: "uri", description: "An absolute http(s) URL" });

function hasNoSpaceOrControl(url: string): boolean {
  for (const char of url) {
    const code = char.codePointAt(0) ?? 0;
    if (code <= 0x20 || (code >= 0x7f && code <= 0x9f) || /\s/.test(char)) return false;
  }
  return true;
}

export const documentSchema = z
  .object({
    id,
    category: documentCategory,
    kind: z.enum(documentKind.enumValues),
    title: z.string(),
    description: z.string().nullable(),
    url: z.string().nullable().describe("The link target; null for a file"),
    filename: z.string().nullable(),
    byteSize: z.int().nullable(),
    contentType: z.string().nullable(),
    uploadedBy: id.nullable().describe("The user who filed the document"),
    createdAt: isoDateTime,
  })
  .meta({ id: "Document" });

export const documentListQuery = z.object({
  category: documentCategory.optional().describe("Only documents of this category"),
});

export const documentIdParams = z.object({ document_id: id });

export const documentLinkInput = z
  .strictObject({
    title: documentTitle,
    url: linkUrl,
    category: documentCategory.default("documentation"),
    description: documentDescription.nullable().optional().describe("Null or absent: none"),
  })
  // Request bodies are published with an `Input` suffix: this one as the spec's DocumentLinkInput.
  .meta({
    id: "DocumentLink",
    examples: [
      {
        title: "Gripper datasheet",
        url: "https://example.com/gripper-datasheet.pdf",
        category: "documentation",
      },
    ],
  });

// No `.default()` here: an absent field must stay absent so that it is left alone. The link
// target, category and kind are not editable: sending them is refused as an unknown field.
export const documentPatch = z
  .strictObject({
    title: documentTitle.optional(),
    description: documentDescription.nullable().optional().describe("Null clears it"),
  })
  .meta({ id: "DocumentPatch", examples: [{ description: "Revision C, March 2026" }] });

export const documentIdSchema = z.object({ id }).meta({ id: "DocumentRef" });

export type DocumentCategory = z.infer<typeof documentCategory>;
export type LibraryDocument = z.infer<typeof documentSchema>;
export type DocumentLinkInput = z.infer<typeof documentLinkInput>;
export type DocumentPatch = z.infer<typeof documentPatch>;

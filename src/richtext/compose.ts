import { isDeepStrictEqual } from "node:util";
import type { BlockNode, RichTextDoc } from "./types.js";

// An editor's blank document is a single empty paragraph rather than no
// content, so both count as empty.
export function isEmptyRichText(doc: RichTextDoc): boolean {
  return doc.content.every(isEmptyParagraph);
}

function isEmptyParagraph(block: BlockNode): boolean {
  return block.type === "paragraph" && (block.content ?? []).length === 0;
}

/** The same content: equal documents, or two empty ones however an editor spelled them. */
export function sameRichText(a: RichTextDoc, b: RichTextDoc): boolean {
  return isDeepStrictEqual(a, b) || (isEmptyRichText(a) && isEmptyRichText(b));
}

// `mode=append`: the new content goes below a divider. The divider only
// separates two pieces of content, so it is left out when either side is empty.
export function appendRichText(existing: RichTextDoc, added: RichTextDoc): RichTextDoc {
  if (isEmptyRichText(added)) return { type: "doc", content: [...existing.content] };
  if (isEmptyRichText(existing)) return { type: "doc", content: [...added.content] };
  return {
    type: "doc",
    content: [...existing.content, { type: "horizontalRule" }, ...added.content],
  };
}

import { InvalidRequest } from "../../core/errors.js";
import { appendRichText, isEmptyRichText } from "../../richtext/compose.js";
import type { MarkdownPool } from "../../richtext/markdown-pool.js";
import { nestedTooDeeply } from "../../richtext/nesting.js";
import type { RichTextDoc } from "../../richtext/types.js";

/** A body as stored: the rich text, and the plain text reads and change events return. */
export type StoredBody = { body: RichTextDoc; text: string };

/**
 * Markdown → a stored body, converted off the event loop (markdown-pool.ts). 400 when the
 * markdown is nested too deeply, its conversion runs past its deadline or out of memory, or
 * the body would pass RICH_TEXT_MAX_BYTES.
 */
export async function convertMarkdown(pool: MarkdownPool, markdown: string): Promise<StoredBody> {
  const converted = await pool.convert(markdown);
  switch (converted.kind) {
    case "converted":
      return { body: JSON.parse(converted.json) as RichTextDoc, text: converted.text };
    case "too_deep":
      throw new InvalidRequest(`markdown: ${nestedTooDeeply(converted.line)}`);
    case "too_large":
      throw bodyTooLarge(pool.maxBytes, "markdown: the converted body");
    case "out_of_memory":
      throw new InvalidRequest(
        "markdown: too complex to convert (it needs more memory than a conversion may take); simplify its nesting or split it",
      );
    case "timed_out":
      throw new InvalidRequest(
        `markdown: too complex to convert within ${pool.timeoutMs} ms (MARKDOWN_TIMEOUT_MS); simplify its nesting or split it`,
      );
  }
}

/**
 * `mode=append`: the added body below a divider, refused when the result would pass the size
 * limit. The plain text is composed from the stored one rather than rendered again: blocks
 * flatten one by one, joined by blank lines (plain-text.ts), and the divider is `---`.
 */
export function appendBody(current: StoredBody, added: StoredBody, maxBytes: number): StoredBody {
  const body = appendRichText(current.body, added.body);
  if (Buffer.byteLength(JSON.stringify(body)) > maxBytes) {
    throw bodyTooLarge(maxBytes, "markdown: after appending, the body");
  }
  const pieces = isEmptyRichText(added.body)
    ? [current.text]
    : isEmptyRichText(current.body)
      ? [added.text]
      : [current.text, "---", added.text];
  return { body, text: pieces.filter((piece) => piece !== "").join("\n\n") };
}

function bodyTooLarge(maxBytes: number, subject: string): InvalidRequest {
  return new InvalidRequest(
    `${subject} would pass the limit of ${maxBytes} bytes of stored rich text (RICH_TEXT_MAX_BYTES)`,
  );
}

import type { MessagePort } from "node:worker_threads";
import { markdownToRichText } from "./markdown.js";
import { richTextToPlainText } from "./plain-text.js";
import type { RichTextDoc } from "./types.js";
export type ConversionTask = {
  markdown: string;
  maxBytes: number;
  /** Told when this thread begins the task: the pool's deadline starts then. */
  started: MessagePort;
};

export type ConversionResult =
  | { kind: "converted"; body: RichTextDoc; text: string; bytes: number }
  | { kind: "too_large"; bytes: number };

/**
 * Runs in a worker thread of the markdown pool (markdown-pool.ts): the conversion, the size
 * check and the plain text a read returns, so none of them runs on the event loop, and a body
 * over the limit is never copied back to it.
 */
export default function convertMarkdown({
  markdown,
  maxBytes,
  started,
}: ConversionTask): ConversionResult {
  started.postMessage(null);
  started.close();
  const body = markdownToRichText(markdown);
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > maxBytes) return { kind: "too_large", bytes };
  return { kind: "converted", body, text: richTextToPlainText(body), bytes };
}

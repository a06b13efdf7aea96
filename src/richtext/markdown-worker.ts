import type { MessagePort } from "node:worker_threads";
import { markdownToRichText } from "./markdown.js";
import { lineNestedTooDeeply } from "./nesting.js";
import { richTextToPlainText } from "./plain-text.js";
export type ConversionTask = {
  markdown: string;
  maxBytes: number;
  /** Told when this thread begins the task: the pool's deadline starts then. */
  started: MessagePort;
};

export type ConversionResult =
  /** The body as JSON text: a string crosses to the event loop faster than a copied tree. */
  | { kind: "converted"; json: string; text: string }
  | { kind: "too_large"; bytes: number }
  | { kind: "too_deep"; line: number };

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
  const line = lineNestedTooDeeply(markdown);
  if (line !== null) return { kind: "too_deep", line };
  const body = markdownToRichText(markdown);
  const json = JSON.stringify(body);
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) return { kind: "too_large", bytes };
  return { kind: "converted", json, text: richTextToPlainText(body) };
}

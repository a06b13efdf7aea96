import type { RichTextDoc } from "./types.js";

// Flattens stored rich text to readable plain text (rules: docs/architecture.md, "Plain text
// of rich text"). The input is whatever the database held, so every field is checked and
// nothing here throws.
export function richTextToPlainText(doc: RichTextDoc | unknown): string {
  try {
    return renderBlock(doc);
  } catch (error) {
    // Only absurd nesting (or a cyclic object handed in by code) overflows the
    // stack; fall back to a non-recursive walk that still returns the words.
    if (error instanceof RangeError) return collectTexts(doc).join("\n");
    throw error;
  }
}

type JsonNode = { readonly [key: string]: unknown };

function asNode(value: unknown): JsonNode | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as JsonNode)
    : undefined;
}

function childrenOf(node: JsonNode): unknown[] {
  return Array.isArray(node.content) ? node.content : [];
}

function textOf(node: JsonNode): string | undefined {
  return typeof node.text === "string" ? node.text : undefined;
}

function renderBlock(value: unknown): string {
  const node = asNode(value);
  if (!node) return "";
  switch (node.type) {
    case "doc":
    case "blockquote":
      return joinBlocks(childrenOf(node), "\n\n");
    case "paragraph":
    case "heading":
    case "codeBlock":
    case "text":
    case "hardBreak":
      return renderInline(node);
    case "horizontalRule":
      return "---";
    case "bulletList":
      return renderList(node, () => "- ");
    case "orderedList":
      return renderOrderedList(node);
    default:
      return renderUnknownBlock(node);
  }
}

function joinBlocks(blocks: unknown[], separator: string): string {
  return blocks
    .map(renderBlock)
    .filter((text) => text !== "")
    .join(separator);
}

function renderUnknownBlock(node: JsonNode): string {
  const text = textOf(node);
  if (text !== undefined) return text;
  const children = childrenOf(node);
  return children.every(isInlineNode) ? renderInline(node) : joinBlocks(children, "\n");
}

function isInlineNode(value: unknown): boolean {
  const type = asNode(value)?.type;
  return type === "text" || type === "hardBreak";
}

function renderInline(value: unknown): string {
  const node = asNode(value);
  if (!node) return "";
  if (node.type === "hardBreak") return "\n";
  return textOf(node) ?? childrenOf(node).map(renderInline).join("");
}

function renderOrderedList(node: JsonNode): string {
  const attrs = asNode(node.attrs);
  const start = Number.isSafeInteger(attrs?.start) ? Number(attrs?.start) : 1;
  return renderList(node, (index) => `${start + index}. `);
}

function renderList(node: JsonNode, marker: (index: number) => string): string {
  return childrenOf(node)
    .map((item, index) => renderListItem(item, marker(index)))
    .join("\n");
}

function renderListItem(item: unknown, marker: string): string {
  const node = asNode(item);
  const body = node ? joinBlocks(childrenOf(node), "\n") : "";
  const [first = "", ...rest] = body.split("\n");
  const continuation = rest.map((line) => (line === "" ? "" : `  ${line}`));
  return [`${marker}${first}`.trimEnd(), ...continuation].join("\n");
}

function collectTexts(root: unknown): string[] {
  const texts: string[] = [];
  const seen = new Set<unknown>();
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = asNode(pending.pop());
    if (!node || seen.has(node)) continue;
    seen.add(node);
    const text = textOf(node);
    if (text !== undefined) texts.push(text);
    // Pushed last-first so the stack pops children in document order.
    const children = childrenOf(node);
    for (let i = children.length - 1; i >= 0; i--) pending.push(children[i]);
  }
  return texts;
}

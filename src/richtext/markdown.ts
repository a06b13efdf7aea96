import { getDefaults, Lexer, type MarkedToken, type Token, Tokenizer, type Tokens } from "marked";
import type {
  BlockNode,
  HeadingLevel,
  HeadingNode,
  InlineNode,
  ListItemNode,
  Mark,
  MarkType,
  ParagraphNode,
  RichTextDoc,
  TextNode,
} from "./types.js";

// Converts markdown into stored rich text with marked's lexer only: no HTML is ever produced or
// interpreted. What the spec does not convert (tables, images, raw HTML) is kept as the literal
// text of its source, so nothing is lost.
export function markdownToRichText(markdown: string): RichTextDoc {
  try {
    return { type: "doc", content: convertBlocks(lex(markdown)) };
  } catch (error) {
    // marked (and the recursive conversion) overflow the stack on pathological
    // nesting such as thousands of `>`; keep the text rather than fail the request.
    if (error instanceof RangeError) return literalDoc(markdown);
    throw error;
  }
}

function lex(markdown: string): Token[] {
  // Fresh defaults so a `marked.use()` elsewhere in the process cannot change
  // how stored bodies are parsed.
  return new BoundedLexer({ ...getDefaults(), tokenizer: new BoundedTokenizer() }).lex(markdown);
}

// Caps marked's inline scan-ahead, quadratic on a paragraph of unclosed openers: an inline
// text that would take the document past this (openers × length) is kept as written.
// Why and how: docs/architecture.md, "Bounded markdown lexing".
const INLINE_SCAN_BUDGET = 20_000_000;

// A setext heading's underline is looked for this many lines down, not to the paragraph's end
// (which made lazy list lines quadratic).
const SETEXT_HEADING_MAX_LINES = 64;
const SETEXT_UNDERLINE = /\n {0,3}(?:=+|-+)[ \t]*(?:\n|$)/;

class BoundedTokenizer extends Tokenizer {
  // Relies on marked's internals (`lexer.state`, the Tokenizer's rules), hence its exact pin:
  // marked joins continued lines by copying the previous token's raw, so it is cut to the last
  // character marked reads. docs/architecture.md, "Pinned packages".
  override space(src: string): Tokens.Space | undefined {
    const last = this.lexer.state.lastToken;
    if (last?.type === "paragraph" || last?.type === "text") last.raw = last.raw.slice(-1);
    return super.space(src);
  }

  // Without a `:` or `|` in the delimiter row it is no table: known before marked scans the body.
  override table(src: string): Tokens.Table | undefined {
    const start = src.indexOf("\n") + 1;
    if (start === 0) return undefined;
    const end = src.indexOf("\n", start);
    const delimiterRow = src.slice(start, end === -1 ? undefined : end);
    return /[:|]/.test(delimiterRow) ? super.table(src) : undefined;
  }

  override lheading(src: string): Tokens.Heading | undefined {
    let end = -1;
    for (let line = 0; line <= SETEXT_HEADING_MAX_LINES; line++) {
      end = src.indexOf("\n", end + 1);
      if (end === -1) break;
    }
    const window = end === -1 ? src : src.slice(0, end + 1);
    return SETEXT_UNDERLINE.test(window) ? super.lheading(src) : undefined;
  }
}

class BoundedLexer extends Lexer {
  private budget = INLINE_SCAN_BUDGET;

  override inlineTokens(src: string, tokens: Token[] = []): Token[] {
    const cost = openers(src) * src.length;
    if (cost > this.budget) {
      // `escaped`: taken literally, entities and all (see convertTextToken).
      tokens.push({ type: "text", raw: src, text: src, escaped: true });
      return tokens;
    }
    this.budget -= cost;
    return super.inlineTokens(src, tokens);
  }
}

const OPENER = /([*_~`])\1*|[[!<\\]|www\.|:\/\//g;

function openers(src: string): number {
  return src.match(OPENER)?.length ?? 0;
}

function literalDoc(markdown: string): RichTextDoc {
  const text = markdown.trim();
  return { type: "doc", content: text === "" ? [] : [paragraph([plainText(text)])] };
}

// --- blocks -----------------------------------------------------------------

function convertBlocks(tokens: readonly Token[]): BlockNode[] {
  return tokens.flatMap(convertBlock);
}

function convertBlock(token: Token): BlockNode[] {
  // No extensions are registered, so every token is one of marked's own; the
  // default branch still covers anything unexpected.
  const t = token as MarkedToken;
  switch (t.type) {
    case "space":
    case "def":
      return [];
    case "paragraph":
      return [paragraph(convertInline(t.tokens, []))];
    case "text":
      return [paragraph(convertTextToken(t, []))];
    case "heading":
      return [heading(t.depth, convertInline(t.tokens, []))];
    case "list":
      return [convertList(t)];
    case "code":
      return [codeBlock(t.text, t.lang)];
    case "blockquote":
      return [{ type: "blockquote", content: nonEmptyBlocks(convertBlocks(t.tokens)) }];
    case "hr":
      return [{ type: "horizontalRule" }];
    case "html":
      return literalBlock(t.text.replace(/\n+$/, ""));
    case "checkbox":
      return literalBlock(checkboxText(t.checked));
    default:
      // Tables land here on purpose: the spec keeps them as their markdown source.
      return literalBlock(t.raw.trim());
  }
}

function paragraph(content: InlineNode[]): ParagraphNode {
  return content.length === 0 ? { type: "paragraph" } : { type: "paragraph", content };
}

function heading(depth: number, content: InlineNode[]): HeadingNode {
  const level = Math.min(Math.max(Math.trunc(depth), 1), 6) as HeadingLevel;
  return content.length === 0
    ? { type: "heading", attrs: { level } }
    : { type: "heading", attrs: { level }, content };
}

function codeBlock(text: string, lang: string | undefined): BlockNode {
  // The info string may carry more than the language (```js title="x"); editors
  // only understand the language word.
  const language = lang?.trim().split(/\s+/)[0] || null;
  return text === ""
    ? { type: "codeBlock", attrs: { language } }
    : { type: "codeBlock", attrs: { language }, content: [{ type: "text", text }] };
}

function literalBlock(text: string): BlockNode[] {
  return text === "" ? [] : [paragraph([plainText(text)])];
}

// ProseMirror rejects containers declared `block+` when they are empty.
function nonEmptyBlocks(blocks: BlockNode[]): BlockNode[] {
  return blocks.length === 0 ? [paragraph([])] : blocks;
}

function convertList(list: Tokens.List): BlockNode {
  const content = list.items.map(convertListItem);
  if (!list.ordered) return { type: "bulletList", content };
  const start = typeof list.start === "number" ? list.start : 1;
  return { type: "orderedList", attrs: { start }, content };
}

function convertListItem(item: Tokens.ListItem): ListItemNode {
  // In tight task lists marked emits the checkbox as a block token ahead of the
  // item text; the schema has no task items, so keep it as literal text.
  const [first, ...rest] = item.tokens;
  const blocks =
    first?.type === "checkbox"
      ? prependText(convertBlocks(rest), checkboxText(first.checked === true))
      : convertBlocks(item.tokens);
  return { type: "listItem", content: withLeadingParagraph(blocks) };
}

// Editors require a list item to open with a paragraph (`paragraph block*`).
function withLeadingParagraph(blocks: BlockNode[]): BlockNode[] {
  return blocks[0]?.type === "paragraph" ? blocks : [paragraph([]), ...blocks];
}

function prependText(blocks: BlockNode[], text: string): BlockNode[] {
  const [first, ...rest] = blocks;
  if (first?.type !== "paragraph") return [paragraph([plainText(text)]), ...blocks];
  return [paragraph(mergeAdjacentText([plainText(text), ...(first.content ?? [])])), ...rest];
}

function checkboxText(checked: boolean): string {
  return checked ? "[x] " : "[ ] ";
}

// --- inline -----------------------------------------------------------------

function convertInline(tokens: readonly Token[] | undefined, marks: Mark[]): InlineNode[] {
  const nodes = (tokens ?? []).flatMap((token) => convertInlineToken(token, marks));
  return mergeAdjacentText(nodes);
}

function convertInlineToken(token: Token, marks: Mark[]): InlineNode[] {
  const t = token as MarkedToken;
  switch (t.type) {
    case "text":
      return convertTextToken(t, marks);
    case "escape":
      return textNode(t.text, marks);
    case "strong":
      return convertInline(t.tokens, withMark(marks, { type: "bold" }));
    case "em":
      return convertInline(t.tokens, withMark(marks, { type: "italic" }));
    case "del":
      return convertInline(t.tokens, withMark(marks, { type: "strike" }));
    case "codespan":
      return textNode(t.text, withMark(marks, { type: "code" }));
    case "link":
      return convertLink(t, marks);
    case "br":
      return [{ type: "hardBreak" }];
    case "checkbox":
      return textNode(checkboxText(t.checked), marks);
    case "html":
      return textNode(t.text, marks);
    default:
      // Images land here on purpose: the spec keeps them as their markdown source.
      return textNode(t.raw, marks);
  }
}

function convertTextToken(token: Tokens.Text, marks: Mark[]): InlineNode[] {
  if (token.tokens) return convertInline(token.tokens, marks);
  // `escaped` marks text inside raw HTML blocks, which marked leaves untouched.
  return textNode(token.escaped ? token.text : decodeEntities(token.text), marks);
}

function convertLink(link: Tokens.Link, marks: Mark[]): InlineNode[] {
  // Autolinks are taken literally, while written links may carry character
  // references in their target and text like any other text.
  const href = link.autolink ? link.href : decodeEntities(link.href);
  // Any editor that renders the stored link would run a `javascript:` or
  // `data:` target: such a link stays the plain text it was written as.
  if (!isSafeLinkTarget(href)) return textNode(link.raw, marks);
  if (link.autolink) return textNode(link.text, withMark(marks, linkMark(href, null)));
  const title = link.title ? decodeEntities(link.title) : null;
  const linked = withMark(marks, linkMark(href, title));
  const content = convertInline(link.tokens, linked);
  // An empty link text would vanish from the document; show the target instead.
  return content.length > 0 ? content : textNode(decodeEntities(link.href), linked);
}

const SAFE_SCHEMES = new Set(["http", "https", "mailto"]);
// The named references of whitespace and of `:` that a target written into
// HTML would have decoded before the browser reads its scheme.
const WHITESPACE_REFERENCE = /&(?:tab|newline|nbsp);/gi;
const COLON_REFERENCE = /&colon;/gi;

/** Drops what a browser ignores in a URL: controls, spaces, tabs and newlines. */
function withoutIgnoredCharacters(href: string): string {
  let kept = "";
  for (const character of href) {
    const code = character.codePointAt(0) ?? 0;
    if (code > 0x20 && (code < 0x7f || code > 0x9f)) kept += character;
  }
  return kept;
}

/**
 * A link target is kept when its scheme is http, https or mailto, or when it
 * is a plain relative reference: no scheme, nor anything that could spell one
 * (a `:` or a character reference) before its path, query or fragment.
 */
function isSafeLinkTarget(href: string): boolean {
  const probe = withoutIgnoredCharacters(
    href.replace(WHITESPACE_REFERENCE, "").replace(COLON_REFERENCE, ":"),
  );
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(probe)?.[1];
  if (scheme !== undefined) return SAFE_SCHEMES.has(scheme.toLowerCase());
  const beforePath = probe.split(/[/?#]/, 1)[0] ?? "";
  return !beforePath.includes(":") && !beforePath.includes("&");
}

function linkMark(href: string, title: string | null): Mark {
  return { type: "link", attrs: { href, title } };
}

function plainText(text: string): TextNode {
  return { type: "text", text };
}

function textNode(text: string, marks: Mark[]): TextNode[] {
  if (text === "") return [];
  return marks.length === 0 ? [plainText(text)] : [{ type: "text", text, marks }];
}

// A fixed order makes equal formatting compare equal however it was nested
// (`***a***` parses as em-in-strong or strong-in-em depending on delimiters).
const MARK_ORDER: readonly MarkType[] = ["link", "bold", "italic", "strike", "code"];

function withMark(marks: Mark[], mark: Mark): Mark[] {
  const others = marks.filter((m) => m.type !== mark.type);
  return [...others, mark].sort((a, b) => MARK_ORDER.indexOf(a.type) - MARK_ORDER.indexOf(b.type));
}

function sameMarks(a: Mark[] | undefined, b: Mark[] | undefined): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
}

// Escapes, entities and inline HTML split text into several tokens; editors
// normalise adjacent equally-marked text into one node, so do the same.
function mergeAdjacentText(nodes: InlineNode[]): InlineNode[] {
  const merged: InlineNode[] = [];
  for (const node of nodes) {
    const previous = merged.at(-1);
    if (
      node.type === "text" &&
      previous?.type === "text" &&
      sameMarks(previous.marks, node.marks)
    ) {
      merged[merged.length - 1] = { ...previous, text: previous.text + node.text };
    } else {
      merged.push(node);
    }
  }
  return merged;
}

// --- entities ---------------------------------------------------------------

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
};

// Same numeric bounds as marked, so references it refused stay literal here too.
const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/g;

// marked re-escapes a bare `&` and leaves named references and link targets encoded. One pass,
// so `&amp;lt;` becomes the literal `&lt;` as CommonMark specifies; named entities beyond the
// escaping set (e.g. `&copy;`) are left as typed.
function decodeEntities(text: string): string {
  return text.replace(ENTITY, (match, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) return NAMED_ENTITIES[name] ?? match;
    const codePoint = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex ?? "", 16);
    return isValidCodePoint(codePoint) ? String.fromCodePoint(codePoint) : "\uFFFD";
  });
}

function isValidCodePoint(codePoint: number): boolean {
  return codePoint > 0 && codePoint <= 0x10ffff && (codePoint < 0xd800 || codePoint > 0xdfff);
}

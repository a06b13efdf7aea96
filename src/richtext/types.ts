// Stored rich-text JSON, shaped like TipTap/ProseMirror document JSON so an editor can load it
// as-is. Inline-only containers may omit `content`, as ProseMirror serialises empty nodes.

type BoldMark = { type: "bold" };
type ItalicMark = { type: "italic" };
type StrikeMark = { type: "strike" };
type CodeMark = { type: "code" };
type LinkMark = { type: "link"; attrs: { href: string; title: string | null } };

export type Mark = BoldMark | ItalicMark | StrikeMark | CodeMark | LinkMark;
export type MarkType = Mark["type"];

export type TextNode = { type: "text"; text: string; marks?: Mark[] };
type HardBreakNode = { type: "hardBreak" };
export type InlineNode = TextNode | HardBreakNode;

export type HeadingLevel = 1 | 2 | 3 | 4 | 5 | 6;

export type ParagraphNode = { type: "paragraph"; content?: InlineNode[] };
export type HeadingNode = {
  type: "heading";
  attrs: { level: HeadingLevel };
  content?: InlineNode[];
};
// A list item starts with a paragraph; nested lists (or other blocks) follow it.
export type ListItemNode = { type: "listItem"; content: BlockNode[] };
type BulletListNode = { type: "bulletList"; content: ListItemNode[] };
type OrderedListNode = {
  type: "orderedList";
  attrs: { start: number };
  content: ListItemNode[];
};
// Code is verbatim, so its single text node never carries marks.
type CodeBlockNode = {
  type: "codeBlock";
  attrs: { language: string | null };
  content?: [{ type: "text"; text: string }];
};
type BlockquoteNode = { type: "blockquote"; content: BlockNode[] };
type HorizontalRuleNode = { type: "horizontalRule" };

export type BlockNode =
  | ParagraphNode
  | HeadingNode
  | BulletListNode
  | OrderedListNode
  | CodeBlockNode
  | BlockquoteNode
  | HorizontalRuleNode;

export type RichTextNode = BlockNode | ListItemNode | InlineNode;

export type RichTextDoc = { type: "doc"; content: BlockNode[] };

export function emptyRichText(): RichTextDoc {
  return { type: "doc", content: [] };
}

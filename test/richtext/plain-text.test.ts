import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { appendRichText } from "../../src/richtext/compose.js";
import { markdownToRichText } from "../../src/richtext/markdown.js";
import { richTextToPlainText } from "../../src/richtext/plain-text.js";
import { emptyRichText } from "../../src/richtext/types.js";

function plain(markdown: string): string {
  return richTextToPlainText(markdownToRichText(markdown));
}

describe("richTextToPlainText", () => {
  it("flattens an empty doc to an empty string", () => {
    expect(richTextToPlainText(emptyRichText())).toBe("");
    expect(richTextToPlainText({ type: "doc", content: [{ type: "paragraph" }] })).toBe("");
  });

  it("separates top-level blocks by one blank line", () => {
    expect(plain("# Title\n\nfirst\nsecond\n\n## Sub")).toBe("Title\n\nfirst\nsecond\n\nSub");
  });

  it("drops heading markers at every level", () => {
    expect(plain("# a\n## b\n### c\n#### d\n##### e\n###### f")).toBe("a\n\nb\n\nc\n\nd\n\ne\n\nf");
  });

  it("puts bullet items on their own lines", () => {
    expect(plain("- one\n- two")).toBe("- one\n- two");
  });

  it("numbers items from the list start", () => {
    expect(plain("3. three\n4. four\n5. five")).toBe("3. three\n4. four\n5. five");
  });

  it("indents nested lists by two spaces per level", () => {
    expect(plain("1. one\n2. two\n   - bullet\n     1. deep\n     2. deeper\n3. three")).toBe(
      ["1. one", "2. two", "  - bullet", "    1. deep", "    2. deeper", "3. three"].join("\n"),
    );
  });

  it("indents the further lines of a list item", () => {
    expect(plain("- first  \n  broken\n\n  second para\n- [x] task")).toBe(
      "- first\n  broken\n  second para\n- [x] task",
    );
  });

  it("drops marks and keeps link text without the href", () => {
    expect(plain('**b** *i* ~~s~~ `c` [link **text**](https://e.com "T") <https://a.b>')).toBe(
      "b i s c link text https://a.b",
    );
  });

  it("keeps code verbatim and renders rules as ---", () => {
    expect(plain("```js\n  if (a < b) {\n    go();\n  }\n```\n\n---\n\nafter")).toBe(
      "  if (a < b) {\n    go();\n  }\n\n---\n\nafter",
    );
  });

  it("flattens blockquotes without a prefix", () => {
    expect(plain("> one\n>\n> two\n\nout")).toBe("one\n\ntwo\n\nout");
  });

  it("keeps tables, images and raw HTML as their source text", () => {
    const table = "| a | b |\n|---|---|\n| 1 | 2 |";
    expect(plain(`${table}\n\nSee ![alt](a.png) and <b>x</b>`)).toBe(
      `${table}\n\nSee ![alt](a.png) and <b>x</b>`,
    );
  });

  it("shows escaped and special characters as typed", () => {
    expect(plain("\\*a\\* < b & c &amp; \"d\" 'e'")).toBe("*a* < b & c & \"d\" 'e'");
  });

  it("shows the divider added by append", () => {
    const doc = appendRichText(markdownToRichText("old"), markdownToRichText("new"));
    expect(richTextToPlainText(doc)).toBe("old\n\n---\n\nnew");
  });

  it("turns hard breaks into newlines", () => {
    expect(plain("a  \nb")).toBe("a\nb");
  });

  it("flattens unknown nodes from their text or children", () => {
    const doc = {
      type: "doc",
      content: [
        {
          type: "paragraph",
          content: [
            { type: "text", text: "hi " },
            { type: "mention", attrs: { id: "u1" }, content: [{ type: "text", text: "@ann" }] },
            { type: "emoji", text: "!" },
          ],
        },
        {
          type: "taskList",
          content: [
            {
              type: "taskItem",
              content: [{ type: "paragraph", content: [{ type: "text", text: "t1" }] }],
            },
            {
              type: "taskItem",
              content: [{ type: "paragraph", content: [{ type: "text", text: "t2" }] }],
            },
          ],
        },
        { type: "callout", content: [{ type: "text", text: "inline " }, { type: "hardBreak" }] },
      ],
    };
    expect(richTextToPlainText(doc)).toBe("hi @ann!\n\nt1\nt2\n\ninline \n");
  });

  it("never throws on malformed input", () => {
    const cyclic: { type: string; content: unknown[] } = { type: "doc", content: [] };
    cyclic.content.push(cyclic, { type: "text", text: "loop" });
    const samples: unknown[] = [
      null,
      undefined,
      42,
      "doc",
      [],
      {},
      { type: "doc", content: "nope" },
      { type: "doc", content: [null, 1, "x", [], { type: 5 }, { text: 7 }] },
      { type: "orderedList", attrs: { start: "7" }, content: [{ type: "listItem" }, null] },
      { type: "orderedList", attrs: null, content: [{ type: "listItem", content: "x" }] },
      { type: "paragraph", content: [{ type: "text" }, { type: "text", text: null }] },
      cyclic,
    ];
    for (const sample of samples) {
      expect(typeof richTextToPlainText(sample)).toBe("string");
    }
    expect(richTextToPlainText(samples[8])).toBe("1.\n2.");
    expect(richTextToPlainText(cyclic)).toContain("loop");
  });

  it("still returns the text of absurdly deep documents", () => {
    let node: unknown = { type: "text", text: "bottom" };
    for (let i = 0; i < 100_000; i++) node = { type: "blockquote", content: [node] };
    expect(richTextToPlainText({ type: "doc", content: [node] })).toBe("bottom");
  });

  it("never throws on the conversion of arbitrary strings", () => {
    const markdownish = fc
      .array(
        fc.constantFrom(
          ...["#", "-", "*", "_", "~", "1.", "7.", "`", "```", ">", "|", "---", "[", "]", "("],
          ...[")", "!", "<", "&", "\\", "\n", "\n\n", " ", "   ", "a", "<div>", "&#65;"],
        ),
        { maxLength: 60 },
      )
      .map((parts) => parts.join(""));
    const anyString = fc.oneof(fc.string(), fc.string({ unit: "binary" }), markdownish);
    fc.assert(
      fc.property(anyString, (markdown) => {
        expect(typeof richTextToPlainText(markdownToRichText(markdown))).toBe("string");
      }),
      { numRuns: 500 },
    );
  });
});

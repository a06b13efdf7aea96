import { describe, expect, it } from "vitest";
import { lineNestedTooDeeply, MAX_MARKDOWN_PREFIX_COLUMNS } from "../../src/richtext/nesting.js";

const limit = MAX_MARKDOWN_PREFIX_COLUMNS;

describe("the markdown nesting limit", () => {
  it("lets ordinary documents through", () => {
    expect(lineNestedTooDeeply("# Title\n\n- a\n  - b\n    1. c\n> quoted\n> > twice")).toBeNull();
    expect(lineNestedTooDeeply(`${" ".repeat(limit - 2)}- at the limit`)).toBeNull();
  });

  it.each([
    ["indentation", `intro\n${" ".repeat(limit + 1)}- too deep`, 2],
    ["tabs, to the next stop of four", `${"\t".repeat(limit / 4)}\t- too deep`, 1],
    ["bullets on one line", `${"- ".repeat(limit / 2 + 1)}x`, 1],
    ["ordinals on one line", `${"1. ".repeat(limit / 3 + 1)}x`, 1],
    ["quote markers", `${">".repeat(limit + 1)} x`, 1],
  ])("names the first line too deep by %s", (_, markdown, line) => {
    expect(lineNestedTooDeeply(markdown)).toBe(line);
  });

  it("does not count indentation inside a top-level code fence", () => {
    const code = `${" ".repeat(limit * 2)}"deeply": "indented"`;
    expect(lineNestedTooDeeply(`\`\`\`json\n${code}\n\`\`\`\nafter`)).toBeNull();
    expect(lineNestedTooDeeply(`~~~~\n${code}\n~~~\n${code}\n~~~~`)).toBeNull();
    expect(lineNestedTooDeeply(`\`\`\`\n${code}\n\`\`\`\n${code}`)).toBe(4);
  });

  it("reads a megabyte of nesting in one linear pass", () => {
    const hostile = Array.from({ length: 1000 }, (_, i) => `${"  ".repeat(i)}- item`).join("\n");
    expect(lineNestedTooDeeply(hostile)).toBe(limit / 2 + 1);
    expect(lineNestedTooDeeply(`${"- ".repeat(500_000)}x`)).toBe(1);
  });
});

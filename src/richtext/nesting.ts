import type { z } from "zod";

/**
 * marked lexes a nested list or quote once per level, so its cost grows with the square of the
 * nesting: markdown is refused when a line starts deeper than this many columns of indentation
 * and list or quote markers (16 levels at four spaces, 32 at two).
 */
export const MAX_MARKDOWN_PREFIX_COLUMNS = 64;

const TAB_STOP = 4;

// Indentation, bullets, ordinals and `>` at the start of a line: what opens nested blocks.
const CONTAINER_PREFIX = /^(?:[ \t>]|[-*+](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))*/;

// A fence at the top level (at most three spaces in) opens code, where nothing nests.
const TOP_LEVEL_FENCE = /^ {0,3}(`{3,}|~{3,})/;

function prefixColumns(line: string): number {
  const prefix = CONTAINER_PREFIX.exec(line)?.[0] ?? "";
  let columns = 0;
  for (const character of prefix) {
    columns = character === "\t" ? columns + TAB_STOP - (columns % TAB_STOP) : columns + 1;
  }
  return columns;
}

/** The 1-based number of the first line nested deeper than the limit, or null. */
export function lineNestedTooDeeply(markdown: string): number | null {
  let openFence: string | null = null;
  const lines = markdown.split("\n");
  for (const [index, line] of lines.entries()) {
    const fence = TOP_LEVEL_FENCE.exec(line)?.[1];
    if (openFence !== null) {
      if (fence?.startsWith(openFence)) openFence = null;
      continue;
    }
    if (fence !== undefined) {
      openFence = fence;
      continue;
    }
    if (prefixColumns(line) > MAX_MARKDOWN_PREFIX_COLUMNS) return index + 1;
  }
  return null;
}

export function nestedTooDeeply(line: number): string {
  return `line ${line} is nested too deeply (at most ${MAX_MARKDOWN_PREFIX_COLUMNS} columns of indentation and list or quote markers)`;
}

/** For a zod `superRefine` on a markdown field: the issue names the line at fault. */
export function checkMarkdownNesting(markdown: string, context: z.RefinementCtx): void {
  const line = lineNestedTooDeeply(markdown);
  if (line === null) return;
  context.addIssue({ code: "custom", message: nestedTooDeeply(line) });
}

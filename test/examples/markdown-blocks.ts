export type FencedBlock = { language: string; code: string };

const FENCE = /^(`{3,}|~{3,})\s*(\S*)/;

/** The fenced code blocks of a piece of markdown, in order, with their info string's language. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let open: { fence: string; language: string; lines: string[] } | null = null;
  for (const line of markdown.split("\n")) {
    if (open === null) {
      const match = FENCE.exec(line);
      if (match !== null) open = { fence: match[1] as string, language: match[2] ?? "", lines: [] };
    } else if (line.trim().startsWith(open.fence) && line.trim().replace(/[`~]/g, "") === "") {
      blocks.push({ language: open.language, code: open.lines.join("\n") });
      open = null;
    } else {
      open.lines.push(line);
    }
  }
  if (open !== null) throw new Error("A fenced block is never closed");
  return blocks;
}

/**
 * The sample output a block shows in its comments (`# {"ok":true,…}`): the JSON lines, where
 * `…` stands for anything. The test holds each to what the block really printed.
 */
export function documentedJsonLines(block: string): RegExp[] {
  return block
    .split("\n")
    .map((line) => /^#\s+(\{.*)$/.exec(line)?.[1])
    .filter((sample): sample is string => sample !== undefined)
    .map(
      (sample) =>
        new RegExp(
          `^${sample
            .split("…")
            .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
            .join(".*?")}$`,
          "m",
        ),
    );
}

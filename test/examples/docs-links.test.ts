import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/cli.js";

/**
 * The docs hold together as a clone has them: every relative link in the READMEs and docs/ leads
 * to a file of this repository, every `#anchor` to a heading of its file (as GitHub names
 * them), and nothing points outside the checkout.
 */

const DOCS = [
  "README.md",
  "examples/addon/README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

const FENCE = /^\s*(`{3,}|~{3,})/;

/** The text outside fenced blocks, so that code that looks like a link or heading is no link. */
function prose(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const marker = FENCE.exec(line)?.[1];
    if (fence === null && marker !== undefined) fence = marker;
    else if (fence !== null && marker !== undefined && line.trim().startsWith(fence)) fence = null;
    else if (fence === null) lines.push(line);
  }
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, "")
    .replaceAll(" ", "-");
}

function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(readFileSync(file, "utf8"))) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

type Link = { from: string; target: string };

function linksOf(file: string): Link[] {
  const text = prose(readFileSync(path.join(ROOT, file), "utf8"))
    .join("\n")
    .replace(/`[^`\n]*`/g, "");
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)];
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)];
  return [...inline, ...references].map((match) => ({ from: file, target: match[1] as string }));
}

/** Why a link does not resolve inside the repository, or null when it does. */
function problem({ from, target }: Link): string | null {
  if (/^[a-z][a-z\d+.-]*:/i.test(target)) {
    return /^(https?|mailto):/i.test(target) ? null : "a scheme other than http(s) or mailto";
  }
  const [pathPart = "", anchor] = target.split("#", 2);
  if (pathPart.startsWith("/")) return "an absolute path, which a clone does not have";
  const resolved =
    pathPart === ""
      ? path.join(ROOT, from)
      : path.resolve(ROOT, path.dirname(from), decodeURIComponent(pathPart));
  const inside = path.relative(ROOT, resolved);
  if (inside.startsWith("..") || path.isAbsolute(inside)) return "outside the repository";
  if (!existsSync(resolved)) return "no such file";
  if (anchor === undefined) return null;
  if (!resolved.endsWith(".md")) return "an anchor into a file that is not markdown";
  return anchorsOf(resolved).has(anchor) ? null : `no heading #${anchor} in ${inside}`;
}

describe("links in README.md and docs/", () => {
  const links = DOCS.flatMap(linksOf);

  it("finds the links it checks", () => {
    expect(links.length).toBeGreaterThan(50);
    expect(links.some((link) => link.target.includes("#"))).toBe(true);
  });

  it("each lead to a file and heading of this repository", () => {
    const broken = links
      .map((link) => ({ ...link, problem: problem(link) }))
      .filter((link) => link.problem !== null);
    expect(broken).toEqual([]);
  });

  it("name nothing outside the checkout, in links or in the text", () => {
    for (const file of DOCS) {
      expect(readFileSync(path.join(ROOT, file), "utf8"), file).not.toMatch(
        /\.\.\/shared|\/work\/|workspace-api-spec\.md/,
      );
    }
  });

  it("lead from the README to every topic in docs/", () => {
    const fromReadme = new Set(
      linksOf("README.md").map((link) => path.normalize(link.target.split("#")[0] as string)),
    );
    const topics = DOCS.filter((file) => file.startsWith("docs/"));
    expect(topics.filter((file) => !fromReadme.has(file))).toEqual([]);
  });

  it("are recognised as GitHub names the headings", () => {
    expect(slug("The CLI: `svc`")).toBe("the-cli-svc");
    expect(slug("OAuth 2.0 for addons")).toBe("oauth-20-for-addons");
    expect(slug("Receive webhooks, step by step")).toBe("receive-webhooks-step-by-step");
    expect(slug("[Tokens](api.md) and scopes")).toBe("tokens-and-scopes");
  });
});

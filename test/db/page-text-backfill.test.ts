import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { markdownToRichText } from "../../src/richtext/markdown.js";
import { richTextToPlainText } from "../../src/richtext/plain-text.js";
import { TEST_DATABASE_URL } from "../support/env.js";

// Migration 0011 fills the new `pages.text` and `meetings.minutes_text` of existing rows with
// session-only SQL functions that follow src/richtext/plain-text.ts; they must agree with it.

const MIGRATION = new URL("../../migrations/0011_page_and_minutes_text.sql", import.meta.url);

let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  const statements = readFileSync(MIGRATION, "utf8").split("--> statement-breakpoint");
  // pg_temp: the functions live and die with this test's connection, as with the migration's.
  for (const statement of statements.filter((s) => s.includes("CREATE FUNCTION pg_temp."))) {
    await client.query(statement);
  }
});
afterAll(() => client?.end());

const MARKDOWN = [
  "# Title\n\nA paragraph with *emphasis*, `code` and [a link](https://example.com).",
  "- a\n  - b\n\n    more of b\n- c\n\n3. three\n4. four\n\n> quoted\n> - item\n>   1. nested",
  "```js\nconst x = 1;\n```\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |",
  "line  \nbreak\n\n- [ ] task\n- [x] done\n\n-\n- \n",
  "",
];

const ODD_DOCUMENTS: unknown[] = [
  { type: "doc", content: [{ type: "widget", content: [{ type: "text", text: "inline" }] }] },
  {
    type: "doc",
    content: [{ type: "box", content: [{ type: "paragraph" }, { type: "x", text: "t" }] }],
  },
  {
    type: "doc",
    content: [5, null, { type: "orderedList", attrs: { start: 1.5 }, content: ["x"] }],
  },
  {
    type: "doc",
    content: [
      { type: "orderedList", attrs: { start: 7 }, content: [{ type: "listItem", content: [] }] },
    ],
  },
  { type: "doc" },
];

describe("the backfill of stored plain text", () => {
  it.each([...MARKDOWN.map(markdownToRichText), ...ODD_DOCUMENTS].map((doc) => [doc]))(
    "flattens %j as richTextToPlainText does",
    async (doc) => {
      const { rows } = await client.query<{ text: string }>(
        "select pg_temp.rich_text_block($1::jsonb) as text",
        [JSON.stringify(doc)],
      );
      expect(rows[0]?.text).toBe(richTextToPlainText(doc));
    },
  );
});

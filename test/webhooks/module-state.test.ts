import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The delivery pipeline's state (caches, agents, grouped statements) belongs to the objects the
// worker builds and closes; a variable at module level would outlive them and be shared by all.

const webhooksDir = fileURLToPath(new URL("../../src/webhooks", import.meta.url));
const COLLECTIONS = /^new (Map|WeakMap|Set|WeakSet)\b/;

/** `file:line name` of each module-level `let`/`var`, or `const` holding a writable collection. */
function moduleStateIn(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const list = statement.declarationList;
    const isConst = (list.flags & ts.NodeFlags.Const) !== 0;
    for (const declaration of list.declarations) {
      const readonlyType = declaration.type?.getText(source).startsWith("Readonly") ?? false;
      const collection = COLLECTIONS.test(declaration.initializer?.getText(source) ?? "");
      if (isConst && (readonlyType || !collection)) continue;
      const { line } = source.getLineAndCharacterOfPosition(declaration.getStart(source));
      found.push(`${fileName}:${line + 1} ${declaration.name.getText(source)}`);
    }
  }
  return found;
}

describe("src/webhooks", () => {
  it("keeps no mutable state at module level", async () => {
    const files = (await readdir(webhooksDir)).filter((name) => name.endsWith(".ts"));
    const found: string[] = [];
    for (const name of files) {
      const text = await readFile(path.join(webhooksDir, name), "utf8");
      found.push(...moduleStateIn(name, text));
    }
    expect(files.length).toBeGreaterThan(0);
    expect(found).toEqual([]);
  });

  it("would find a module-level cache or counter", () => {
    const text = "const cache = new Map<string, string>();\nlet count = 0;\nconst LIMIT = 5;\n";
    expect(moduleStateIn("example.ts", text)).toEqual(["example.ts:1 cache", "example.ts:2 count"]);
  });
});

import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

// The layering check of `npm run lint` (docs/architecture.md, "Layout"): it passes on src/ and the
// client package, and it fails on the mistakes it exists for, shown on a small tree of our own.

const root = fileURLToPath(new URL("..", import.meta.url));
const config = path.join(root, ".dependency-cruiser.cjs");
const depcruise = path.join(root, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");

type Violation = { rule: { name: string }; from: string; to: string };

async function violationsIn(cwd: string, folders = ["src"]): Promise<Violation[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [depcruise, ...folders, "--config", config, "--output-type", "json"],
    { cwd, maxBuffer: 64 * 1024 * 1024 },
  ).catch((error: { stdout: string }) => error);
  return JSON.parse(stdout).summary.violations;
}

const scratch: string[] = [];
afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "layout-"));
  scratch.push(dir);
  await writeFile(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: {} }));
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  return dir;
}

describe("the layering check", () => {
  it("finds nothing in src/ and packages/client/src/", async () => {
    expect(await violationsIn(root, ["src", "packages/client/src"])).toEqual([]);
  });

  it("fails on a lower layer importing a higher one, types included", async () => {
    const dir = await tree({
      "src/runtime.ts": "export type Runtime = { name: string };\n",
      "src/queue/jobs.ts":
        'import type { Runtime } from "../runtime.js";\nexport type Jobs = Runtime;\n',
      "src/modules/tasks/service.ts": 'import "../../http/auth.js";\n',
      "src/http/auth.ts": "export {};\n",
    });
    const rules = (await violationsIn(dir)).map((v) => `${v.rule.name} ${v.from} → ${v.to}`);
    expect(rules).toEqual(
      expect.arrayContaining([
        "layer-infrastructure src/queue/jobs.ts → src/runtime.ts",
        "layer-domain src/modules/tasks/service.ts → src/http/auth.ts",
      ]),
    );
  });

  it("fails on an import cycle, between files and between parts", async () => {
    const dir = await tree({
      "src/webhooks/a.ts": 'import "./b.js";\n',
      "src/webhooks/b.ts": 'import "./a.js";\nimport "../modules/c.js";\n',
      "src/modules/c.ts": 'import "../webhooks/routes.js";\n',
      "src/webhooks/routes.ts": "export {};\n",
    });
    const rules = (await violationsIn(dir)).map((v) => v.rule.name);
    expect(rules).toContain("no-circular");
    expect(rules).toContain("part-order-modules");
  });

  it("fails on the client package importing anything of the server", async () => {
    const dir = await tree({
      "packages/client/src/index.ts":
        'import "./api-error.js";\nimport "../../../src/config.js";\n',
      "packages/client/src/api-error.ts": "export {};\n",
      "src/config.ts": "export {};\n",
    });
    const rules = (await violationsIn(dir, ["src", "packages/client/src"])).map(
      (v) => `${v.rule.name} ${v.from} → ${v.to}`,
    );
    expect(rules).toEqual(["client-stands-alone packages/client/src/index.ts → src/config.ts"]);
  });
});

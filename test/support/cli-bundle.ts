import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { BUNDLE_OPTIONS } from "../../scripts/bundle-options.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Bundles the CLI from the current sources, as scripts/bundle.ts bundles the build's: the tests'
 * child processes then load one file instead of compiling about 1,200 modules through tsx at
 * every start. It sits under dist/ so that the service finds migrations/ and views/ above it.
 */
export async function bundleCliForTests(): Promise<{ entry: string; remove(): Promise<void> }> {
  const dir = path.join(ROOT, "dist", `test-cli-${randomBytes(6).toString("hex")}`);
  await Promise.all([
    build({
      ...BUNDLE_OPTIONS,
      entryPoints: [path.join(ROOT, "src/cli/index.ts")],
      outfile: path.join(dir, "svc.mjs"),
    }),
    // The markdown pool's threads load this file from beside the bundle.
    build({
      ...BUNDLE_OPTIONS,
      entryPoints: [path.join(ROOT, "src/richtext/markdown-worker.ts")],
      outfile: path.join(dir, "markdown-worker.mjs"),
    }),
  ]);
  return {
    entry: path.join(dir, "svc.mjs"),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

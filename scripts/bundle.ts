/**
 * `npm run build` step: bundles the compiled CLI and the packages it loads into dist/svc.mjs,
 * which `npm start` and `svc` run: a start reads one file instead of resolving every module.
 * Packages with native addons, WebAssembly or files of their own stay in node_modules.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { BUNDLE_OPTIONS as shared } from "./bundle-options.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

await build({
  ...shared,
  entryPoints: [path.join(ROOT, "dist/src/cli/index.js")],
  outfile: path.join(ROOT, "dist/svc.mjs"),
});

// The markdown pool's worker threads load this file, beside the bundle (markdown-pool.ts).
await build({
  ...shared,
  entryPoints: [path.join(ROOT, "dist/src/richtext/markdown-worker.js")],
  outfile: path.join(ROOT, "dist/markdown-worker.mjs"),
});

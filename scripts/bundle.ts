/**
 * `npm run build` step: bundles the compiled CLI (dist/src/cli/index.js) and the packages it
 * loads into one file, dist/svc.mjs, which `npm start` and `svc` run. Node then reads one file
 * instead of resolving and reading about 1,200 modules at every start, a quarter of the embedded
 * default's restart (bench/RESULTS.md).
 *
 * Left out, and loaded from node_modules as before: packages with native addons (argon2, the
 * msgpack extractor BullMQ tries), PGlite (its WebAssembly and data files sit beside it), the
 * API reference's browser bundle, pino-pretty (development only) and piscina. The markdown
 * pool's worker is bundled apart, into dist/markdown-worker.mjs.
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

/**
 * `npm run build` step: bundles the compiled CLI and the packages it loads into dist/svc.mjs,
 * which `npm start` and `svc` run: a start reads one file instead of resolving every module.
 * Packages with native addons, WebAssembly or files of their own stay in node_modules.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const shared = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: [
    "@electric-sql/pglite",
    "argon2",
    "msgpackr-extract",
    "@scalar/fastify-api-reference",
    "pino-pretty",
    // Piscina starts its threads from its own files, found beside its package.
    "piscina",
  ],
  // The bundled CommonJS packages call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  logLevel: "warning",
} as const;

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

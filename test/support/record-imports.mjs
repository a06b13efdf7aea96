// `node --import ./test/support/record-imports.mjs`: every module the process resolves through
// the ESM loader (the bundle's external packages among them) is appended, one URL a line, to the
// file RECORD_IMPORTS_TO names. The same file serves as the loader hooks it registers.
import { appendFileSync } from "node:fs";
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

if (isMainThread) register(import.meta.url, { data: process.env.RECORD_IMPORTS_TO });

let file;

export function initialize(data) {
  file = data;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}

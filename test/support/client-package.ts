import { execFile } from "node:child_process";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The typed client's package, `@workspace-service/client`. */
export const CLIENT_PACKAGE = path.join(ROOT, "packages/client");

async function newestSourceTime(): Promise<number> {
  const src = path.join(CLIENT_PACKAGE, "src");
  const files = [
    path.join(CLIENT_PACKAGE, "package.json"),
    path.join(CLIENT_PACKAGE, "tsconfig.json"),
    ...(await readdir(src)).map((file) => path.join(src, file)),
  ];
  const times = await Promise.all(files.map(async (file) => (await stat(file)).mtimeMs));
  return Math.max(...times);
}

/**
 * Builds the client package, as `npm run build` does, when a source changed after its last build.
 * The global setup calls it before any file runs, since the sample addon, the docs and the
 * package's own test load its dist/, and a build while they read it would tear it.
 */
export async function buildClientPackageIfStale(): Promise<void> {
  const built = await stat(path.join(CLIENT_PACKAGE, "dist/index.js")).catch(() => undefined);
  if (built !== undefined && built.mtimeMs >= (await newestSourceTime())) return;
  const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc");
  await promisify(execFile)(process.execPath, [tsc, "-p", CLIENT_PACKAGE]).catch(
    (error: { stdout?: string }) => {
      throw new Error(`The client package does not build:\n${error.stdout ?? String(error)}`);
    },
  );
}

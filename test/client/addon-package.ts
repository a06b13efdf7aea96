import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "../support/cli.js";

/**
 * An addon's own folder with the package installed as `npm pack` would ship the client: the
 * package.json and the built client (dist/src/client, without its generator), next to
 * openapi-fetch alone. Whatever else the client imported would not resolve there.
 */
export async function addonWithClientOnly(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "addon-"));
  const modules = path.join(dir, "node_modules");
  const installed = path.join(modules, "workspace-service");
  const client = path.join(installed, "dist/src/client");
  await mkdir(client, { recursive: true });
  await cp(path.join(ROOT, "package.json"), path.join(installed, "package.json"));
  const built = path.join(ROOT, "dist/src/client");
  for (const entry of await readdir(built, { withFileTypes: true })) {
    if (entry.isFile()) await cp(path.join(built, entry.name), path.join(client, entry.name));
  }
  await symlink(path.join(ROOT, "node_modules/openapi-fetch"), path.join(modules, "openapi-fetch"));
  return dir;
}

/** Runs an ES module in the addon's folder; answers what it printed. */
export async function runInAddon(dir: string, source: string): Promise<string> {
  const file = path.join(dir, "addon.mjs");
  await writeFile(file, source);
  const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: dir });
  return stdout;
}

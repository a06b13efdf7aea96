import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServedApp, serveTestApp } from "../support/browser.js";
import { ROOT } from "../support/cli.js";
import { CLIENT_PACKAGE } from "../support/client-package.js";
import { importOrganization, mintToken, project } from "../support/fixtures.js";

/**
 * The client as an addon developer gets it: `npm pack` of packages/client (built by the global
 * setup), the tarball installed into a project of their own outside the repository, a script
 * type-checked against its declarations and run with node against a listening service.
 */

const run = promisify(execFile);

type PackResult = { filename: string; files: Array<{ path: string }> };

/**
 * npm as the developer runs it in their project: without the npm_* settings of an `npm test`
 * that may be running this file, but with the same cache, which `npm ci` filled.
 */
function npmEnvironment(): NodeJS.ProcessEnv {
  const kept = new Set(["npm_config_cache", "npm_config_registry", "npm_config_userconfig"]);
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !name.toLowerCase().startsWith("npm_") || kept.has(name.toLowerCase()),
    ),
  );
}

function npm(args: string[], cwd: string) {
  return run("npm", args, { cwd, env: npmEnvironment() });
}

/** Compiles the project with the repository's TypeScript; answers its diagnostics, if any. */
async function compile(dir: string): Promise<string> {
  const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc");
  return run(process.execPath, [tsc, "-p", dir], { cwd: dir }).then(
    () => "",
    (error: { stdout?: string }) => error.stdout || String(error),
  );
}

function addonScript(baseUrl: string, token: string): string {
  return `import { ApiError, createWorkspaceClient } from "@workspace-service/client";

const client = createWorkspaceClient({ baseUrl: ${JSON.stringify(baseUrl)}, token: ${JSON.stringify(token)} });

// @ts-expect-error: the paths are typed, and the API has none called /nowhere
export const unknownPath = () => client.get("/nowhere");

const me = await client.get("/me");
const projects = await client.get("/projects");
const slugs: string[] = projects.map((project) => project.slug);
const failure: unknown = await client
  .get("/projects/{slug}", { params: { path: { slug: "nowhere" } } })
  .then(() => null, (error: unknown) => error);
console.log(
  JSON.stringify({
    organization: me.organization.slug,
    projects: slugs,
    failure: failure instanceof ApiError ? [failure.status, failure.error] : String(failure),
  }),
);
`;
}

// strict, and node's own resolution of ESM packages: what the package's `exports` must satisfy.
// No @types/node: the client's declarations need only the standard fetch types of lib DOM.
const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    lib: ["ES2023", "DOM"],
    types: [],
    strict: true,
    skipLibCheck: true,
    outDir: "build",
  },
  files: ["addon.ts"],
};

describe("the client package", () => {
  let served: ServedApp;
  let token: string;
  let addon: string;
  let packed: PackResult;

  beforeAll(async () => {
    addon = await mkdtemp(path.join(tmpdir(), "client-package-"));
    const installed = (async () => {
      // No prepack build: it would rewrite dist/ while other files load it.
      const { stdout } = await npm(
        ["pack", "--ignore-scripts", "--json", "--pack-destination", addon],
        CLIENT_PACKAGE,
      );
      [packed] = JSON.parse(stdout) as [PackResult];
      await writeFile(
        path.join(addon, "package.json"),
        JSON.stringify({ name: "addon", private: true, type: "module" }),
      );
      await npm(
        ["install", "--prefer-offline", "--no-audit", "--no-fund", `./${packed.filename}`],
        addon,
      );
    })();
    [served] = await Promise.all([serveTestApp(), installed]);
    const acme = await importOrganization(served.db, "acme", {
      projects: [project("lander"), project("rover")],
    });
    token = await mintToken(served.db, acme);
  });

  afterAll(async () => {
    await served?.close();
    if (addon !== undefined) await rm(addon, { recursive: true, force: true });
  });

  it("packs its manifest and its build, JavaScript and declarations, and nothing else", () => {
    const files = packed.files.map((file) => file.path).sort();
    expect(files).toContain("package.json");
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    expect(files.filter((file) => !/^dist\/[\w-]+\.(js|d\.ts)$/.test(file))).toEqual([
      "README.md",
      "package.json",
    ]);
  });

  it("installs with openapi-fetch as its only dependency", async () => {
    const manifest = JSON.parse(
      await readFile(
        path.join(addon, "node_modules/@workspace-service/client/package.json"),
        "utf8",
      ),
    ) as { dependencies?: Record<string, string> };
    expect(Object.keys(manifest.dependencies ?? {})).toEqual(["openapi-fetch"]);
  });

  it("type-checks a script against its declarations, and the script calls the service", async () => {
    await writeFile(path.join(addon, "tsconfig.json"), JSON.stringify(TSCONFIG));
    await writeFile(path.join(addon, "addon.ts"), addonScript(`${served.url}/api/v1`, token));
    expect(await compile(addon)).toBe("");

    const { stdout } = await run(process.execPath, [path.join(addon, "build/addon.js")], {
      cwd: addon,
    });
    expect(JSON.parse(stdout)).toEqual({
      organization: "acme",
      projects: ["lander", "rover"],
      failure: [404, "not_found"],
    });
  });
});

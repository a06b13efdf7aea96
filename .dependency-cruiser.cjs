/**
 * The layering of src/ (README, "Layout"), checked by `npm run lint`.
 *
 * Two rules keep the arrows pointing one way:
 * - layers: a file may import its own layer or the ones below it, never one above;
 * - parts: the folders directly under src/ (and each top-level file) stand in one order, and a
 *   part imports only parts after it, so no two parts can depend on each other.
 * And no file may take part in an import cycle.
 *
 * The client package (packages/client/, `@workspace-service/client`) runs in addons, without the
 * server: its files import only one another and openapi-fetch. Its type generator
 * (src/client-types/) builds the app to read the OpenAPI document, so it is an entry point.
 */

const ROUTES = "^src/(modules/routes\\.ts$|modules/[^/]+/routes\\.ts$|webhooks/routes\\.ts$)";

/** The client package's sources. */
const CLIENT = "^packages/client/src/";

/** Top to bottom. */
const layers = [
  { name: "entry", path: "^src/(client-types/|cli/|server\\.ts$|worker\\.ts$|runtime\\.ts$)" },
  { name: "face", path: `^src/(app\\.ts$|admin/|oauth/|sessions/)|${ROUTES}` },
  { name: "http", path: "^src/http/" },
  { name: "domain", path: "^src/(modules/|webhooks/|import/|demo/)", pathNot: ROUTES },
  { name: "core", path: "^src/core/" },
  {
    name: "infrastructure",
    path: "^src/(db/|queue/|richtext/|tracing/|metrics/|config\\.ts$|logger\\.ts$)",
  },
];

/** The parts of src/, each importing only the parts after it. */
const partNames = [
  "client-types/",
  "cli/",
  "server\\.ts$",
  "worker\\.ts$",
  "runtime\\.ts$",
  "app\\.ts$",
  "admin/",
  "oauth/",
  "sessions/",
  "demo/",
  "import/",
  "webhooks/",
  "modules/",
  "http/",
  "core/",
  "richtext/",
  "metrics/",
  "db/",
  "queue/",
  "tracing/",
  "logger\\.ts$",
  "config\\.ts$",
];
const parts = partNames.map((part) => `^src/${part}`);

const anyOf = (paths) => paths.map((path) => `(${path})`).join("|");

const layerRules = layers.slice(1).map((layer, index) => {
  const above = layers.slice(0, index + 1);
  return {
    name: `layer-${layer.name}`,
    comment: `The ${layer.name} layer may not import ${above.map((l) => l.name).join(", ")}.`,
    severity: "error",
    from: { path: layer.path, ...(layer.pathNot ? { pathNot: layer.pathNot } : {}) },
    to: { path: anyOf(above.map((l) => l.path)) },
  };
});

const partRules = parts.slice(1).map((part, index) => ({
  name: `part-order-${partNames[index + 1].replace(/[^a-z]+/g, "-").replace(/-$/, "")}`,
  comment: "Parts of src/ import only the parts listed after them (.dependency-cruiser.cjs).",
  severity: "error",
  from: { path: part },
  to: { path: anyOf(parts.slice(0, index + 1)) },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No file may take part in an import cycle.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "client-stands-alone",
      comment:
        "The published client imports only its own files and openapi-fetch, never the server.",
      severity: "error",
      from: { path: CLIENT },
      to: { pathNot: `(${CLIENT})|(^|/)node_modules/openapi-fetch/` },
    },
    ...layerRules,
    ...partRules,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports are dependencies too: a cycle through types is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require"] },
  },
};

import type { FastifyInstance, HTTPMethods } from "fastify";

/** One method of one route as the router holds it, e.g. `PATCH /api/v1/tasks/:task_id`. */
export type RegisteredRoute = { method: HTTPMethods; url: string };

// A line of `printRoutes({ commonPrefix: false })`: the tree drawing (four characters a level),
// the node's part of the path, and the methods registered on it when it is a route.
const TREE_LINE = /^((?:│ {3}| {4})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/;

/**
 * Every route of the app, hidden from the OpenAPI document or not, read from Fastify's own
 * router. `buildApp` registers its routes before it returns, so a test cannot add an `onRoute`
 * hook in time; the printed route tree is the router's public view. Each route read from it is
 * checked with `hasRoute`, so a misread tree fails here instead of shrinking the walk.
 */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  const paths: string[] = [];
  const routes: RegisteredRoute[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    if (line.trim() === "") continue;
    const match = TREE_LINE.exec(line);
    if (match === null) throw new Error(`unexpected line in the route tree: ${line}`);
    const depth = (match[1] ?? "").length / 4;
    const url = `${depth === 0 ? "" : (paths[depth - 1] ?? "")}${match[2]}`;
    paths.length = depth;
    paths.push(url);
    for (const method of match[3]?.split(", ") ?? []) {
      routes.push({ method: method as HTTPMethods, url });
    }
  }
  const read = routes.filter((route) => route.url !== "*").concat(wildcardRoutes(app, routes));
  for (const route of read) {
    if (!app.hasRoute(route)) throw new Error(`misread route ${route.method} ${route.url}`);
  }
  if (read.length === 0) throw new Error("the route tree listed no route");
  return read;
}

/**
 * The tree prints a wildcard route as a bare `*` (several merged into one line), without its
 * prefix: each is looked for after every folder of the other routes. A plugin's `*` under a
 * prefix is registered as e.g. `OPTIONS /api/v1*`.
 */
function wildcardRoutes(app: FastifyInstance, routes: RegisteredRoute[]): RegisteredRoute[] {
  const methods = new Set(routes.filter((route) => route.url === "*").map((route) => route.method));
  const folders = new Set(["/"]);
  for (const { url } of routes) {
    for (let end = url.indexOf("/", 1); end !== -1; end = url.indexOf("/", end + 1)) {
      folders.add(url.slice(0, end));
      folders.add(url.slice(0, end + 1));
    }
  }
  return [...methods].flatMap((method) =>
    [...folders]
      .map((folder) => ({ method, url: `${folder}*` }))
      .filter((route) => app.hasRoute(route)),
  );
}

/** The names of a route's path parameters, in order: `/a/:org/b/:id` → `["org", "id"]`. */
export function pathParameters(url: string): string[] {
  return [...url.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1] as string);
}

/** The route with its parameters filled in (values are used as given, unencoded). */
export function fillPath(url: string, values: Record<string, string>): string {
  return url.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for :${name} in ${url}`);
    return value;
  });
}

/** `/api/v1/tasks/:task_id` as the OpenAPI document writes it: `/tasks/{task_id}`. */
export function openApiPath(url: string): string {
  return url.replace(/^\/api\/v1/, "").replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, "{$1}");
}

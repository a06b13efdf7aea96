import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// A file every checkout and image has; its presence marks the right `views/` folder.
const MARKER = "layout.eta";

/**
 * The templates live in `views/` at the package root, beside `migrations/`; walking up from
 * this module finds them from `src/` (tsx) and from `dist/src/` (compiled) alike.
 */
export function findViewsFolder(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "views");
    if (existsSync(path.join(candidate, MARKER))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("views folder not found beside the package");
    dir = parent;
  }
}

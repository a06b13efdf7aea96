import { defineConfig } from "vitest/config";

// Files that time the test process's own event loop: they run in a fresh process each, so what
// they measure is the app, not the heap and timers that earlier files left in a shared worker.
// Vitest queues projects by name, so "fresh-process" sorts first and these files start at once,
// beside the shared workers, rather than alone after everything else.
const TIMED = ["test/modules/pages-bounds.test.ts"];

// What both projects run with. The projects do not extend the root config, so its global setup
// (a template database, the CLI bundle) runs once and both read what it provides.
const common = {
  // Each file gets its own database and queue prefix, so files run in parallel.
  pool: "forks",
  // Generous: browser and worker tests wait on real processes on a loaded two-core machine.
  testTimeout: 120_000,
  hookTimeout: 120_000,
} as const;

export default defineConfig({
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    reporters: ["default", "./test/support/slowest-files-reporter.ts"],
    // Most files wait on real processes, databases and browsers rather than compute, so three at
    // a time keep a two-core machine busy (Vitest's default there would be one).
    maxWorkers: 3,
    projects: [
      {
        test: {
          ...common,
          name: "shared",
          include: ["test/**/*.test.ts"],
          exclude: TIMED,
          // A worker process runs its files one after another with the modules it already
          // loaded: each file still gets its own app, database and queue prefix, and the suite
          // spends its CPU on tests instead of re-importing the app for every file.
          isolate: false,
        },
      },
      { test: { ...common, name: "fresh-process", include: TIMED, isolate: true } },
    ],
  },
});

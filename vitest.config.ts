import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    reporters: ["default", "./test/support/slowest-files-reporter.ts"],
    // Each file gets its own database and queue prefix, so files run in parallel.
    pool: "forks",
    // Most files wait on real processes, databases and browsers rather than compute, so three at
    // a time keep a two-core machine busy (Vitest's default there would be one).
    maxWorkers: 3,
    // Generous: browser and worker tests wait on real processes on a loaded two-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});

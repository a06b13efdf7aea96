import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // Each file gets its own database and queue prefix, so files run in parallel.
    pool: "forks",
    // Generous: browser and worker tests wait on real processes on a loaded two-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

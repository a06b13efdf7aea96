import { Redis } from "ioredis";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { bundleCliForTests } from "./cli-bundle.js";
import { buildClientPackageIfStale } from "./client-package.js";
import { TEST_DATABASE_URL, TEST_REDIS_URL } from "./env.js";
import { createMigratedTemplate } from "./template-database.js";

const HOW_TO_START =
  "The tests need a real PostgreSQL and Redis. Start them (see docs/testing.md, 'Running the tests'), e.g. " +
  "`docker compose up -d postgres redis`, or set TEST_DATABASE_URL / TEST_REDIS_URL.";

async function checkPostgres(): Promise<void> {
  const client = new pg.Client({
    connectionString: TEST_DATABASE_URL,
    connectionTimeoutMillis: 3000,
  });
  try {
    await client.connect();
    await client.query("select 1");
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${TEST_DATABASE_URL}: ${String(error)}. ${HOW_TO_START}`,
    );
  } finally {
    await client.end().catch(() => {});
  }
}

async function checkRedis(): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on("error", () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(
      `Redis is not reachable at ${TEST_REDIS_URL}: ${String(error)}. ${HOW_TO_START}`,
    );
  } finally {
    redis.disconnect();
  }
}

/**
 * Stops the whole suite at once, with directions, when a real server is missing; then migrates
 * the template every test file's database is copied from, bundles the CLI the tests start and
 * builds the client package if its sources changed, and removes the first two after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await Promise.all([checkPostgres(), checkRedis()]);
  const [template, cli] = await Promise.all([
    createMigratedTemplate(),
    bundleCliForTests(),
    buildClientPackageIfStale(),
  ]);
  project.provide("templateDatabase", template.name);
  project.provide("cliBundle", cli.entry);
  return async () => {
    await Promise.all([template.drop(), cli.remove()]);
  };
}

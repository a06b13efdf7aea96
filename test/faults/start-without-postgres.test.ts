import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect, createServer, type Server } from "node:net";
import { afterAll, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { TEST_REDIS_URL } from "../support/env.js";
import { eventually } from "../support/eventually.js";
import { closedPort, freePort } from "../support/ports.js";
import { type ServiceProcess, startService } from "./service-process.js";

// `svc serve` started while its database does not answer yet, as when an orchestrator starts
// every container at once: it serves, says it is not ready, and is ready once Postgres answers.

let testDatabase: TestDatabase | undefined;
let service: ServiceProcess | undefined;
let forwarder: Server | undefined;

afterAll(async () => {
  await service?.kill();
  forwarder?.close();
  await testDatabase?.drop();
});

/** Listens on `port` and passes every connection through to `target`'s Postgres. */
async function forwardTo(port: number, target: URL): Promise<Server> {
  const server = createServer((socket) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    socket.pipe(upstream).pipe(socket);
    const close = () => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on("error", close);
    upstream.on("error", close);
  });
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  return server;
}

it("serves when Postgres is down at start, and is ready once it answers", async () => {
  testDatabase = await createTestDatabase();
  const target = new URL(testDatabase.url);
  const port = await closedPort("127.0.0.1");
  const unreachable = new URL(testDatabase.url);
  unreachable.hostname = "127.0.0.1";
  unreachable.port = String(port);
  const metricsPort = await freePort();
  service = await startService("serve", {
    DATABASE_URL: unreachable.href,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `start-${randomBytes(6).toString("hex")}`,
    METRICS_PORT: String(metricsPort),
  });
  const readyz = () => fetch(`http://127.0.0.1:${metricsPort}/readyz`).then((res) => res.status);
  expect(await readyz()).toBe(503);
  expect((await fetch(`${service.url}/healthz`)).status).toBe(200);

  forwarder = await forwardTo(port, target);
  await eventually(async () => (await readyz()) === 200);
  expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  expect(service.output()).not.toMatch(/unexpected failure/);
});

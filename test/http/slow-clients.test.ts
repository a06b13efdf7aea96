import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.js";

let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await createTestApp({ HTTP_REQUEST_TIMEOUT_MS: "600", HTTP_CONNECTION_TIMEOUT_MS: "1500" });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  const address = t.app.server.address();
  port = typeof address === "object" && address !== null ? address.port : 0;
});
afterAll(() => t.close());

/** Everything the server sends on a raw connection until it closes it. */
function openConnection(): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, "127.0.0.1");
  const chunks: Buffer[] = [];
  socket.on("data", (chunk) => chunks.push(chunk));
  const closed = new Promise<string>((resolve) =>
    socket.on("close", () => resolve(Buffer.concat(chunks).toString())),
  );
  return { socket, closed };
}

it("answers 408 and closes the connection of a client whose request does not arrive in time", async () => {
  const { socket, closed } = openConnection();
  socket.write(
    "POST /api/v1/oauth/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=",
  );
  // A byte now and then keeps the connection from falling silent: only the request timeout ends it.
  const trickle = setInterval(() => socket.write("a"), 100);
  closed.finally(() => clearInterval(trickle));
  expect(await closed).toMatch(/^HTTP\/1\.1 408 /);
});

it("closes a connection whose request headers do not arrive in time", async () => {
  const { socket, closed } = openConnection();
  socket.write("GET /api/v1/me HTTP/1.1\r\nHost: localhost\r\n");
  expect(await closed).toMatch(/^HTTP\/1\.1 408 /);
});

import { once } from "node:events";
import { type AddressInfo, createServer } from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago, for a server a test starts itself. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** A TCP server on `host` that only counts the connections it accepts. */
export async function startConnectionCounter(host: string) {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  server.listen(0, host);
  await once(server, "listening");
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: async () => {
      server.close();
      await once(server, "close");
    },
  };
}

/** A port on `host` that nothing listens on: bound a moment ago, then released. */
export async function closedPort(host: string): Promise<number> {
  const server = createServer().listen(0, host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

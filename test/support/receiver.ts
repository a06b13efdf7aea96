import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { verifyWebhookSignature } from "../../src/webhooks/verify.js";

export type Received = {
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  receivedAt: number;
};

/** How the receiver answers a request on a path: a status, after a delay, maybe a redirect. */
export type Behaviour = { status?: number; delayMs?: number; location?: string };

/**
 * A real HTTP server on 127.0.0.1 standing in for a webhook receiver: it records every request
 * with its raw bytes and answers as the test tells it to, per path.
 */
export class Receiver {
  readonly received: Received[] = [];
  private readonly behaviours = new Map<string, Behaviour[]>();
  private server: Server | undefined;
  port = 0;

  /** Answers the next requests on `path` with these behaviours in turn, then with the last one. */
  respond(path: string, ...behaviours: Behaviour[]): void {
    this.behaviours.set(path, behaviours);
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  on(path: string): Received[] {
    return this.received.filter((request) => request.path === path);
  }

  /** The `target_id` of each delivery received on `path`, in arrival order. */
  targetIds(path: string): string[] {
    return this.on(path).map((request) => JSON.parse(request.rawBody.toString()).target_id);
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const path = request.url ?? "/";
        this.received.push({
          path,
          headers: request.headers,
          rawBody: Buffer.concat(chunks),
          receivedAt: Date.now(),
        });
        const queue = this.behaviours.get(path) ?? [];
        const behaviour = (queue.length > 1 ? queue.shift() : queue[0]) ?? {};
        setTimeout(() => {
          if (response.destroyed) return;
          const headers = behaviour.location === undefined ? {} : { location: behaviour.location };
          response.writeHead(behaviour.status ?? 204, headers).end();
        }, behaviour.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address !== null ? address.port : 0;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

/** Whether a received delivery carries a valid signature made with `secret`. */
export function isSignedWith(secret: string, request: Received): boolean {
  return verifyWebhookSignature({
    secret,
    rawBody: request.rawBody,
    timestamp: request.headers["x-service-timestamp"] as string | undefined,
    signature: request.headers["x-service-signature"] as string | undefined,
  }).ok;
}

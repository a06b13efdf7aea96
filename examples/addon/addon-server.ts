import { createServer, type IncomingMessage } from "node:http";
import { verifyWebhookSignature } from "workspace-service/verify-webhook";

/** The payload of a delivery (docs/webhooks.md, "For receivers"). */
export type ChangeEvent = {
  id: number;
  type: string;
  action: string;
  target_kind: string;
  target_id: string;
  actor_id: string;
  occurred_at: string;
  diff: { before: Record<string, unknown>; after: Record<string, unknown> };
};

export type AddonServerOptions = {
  port: number;
  webhookSecret: string;
  onEvent: (event: ChangeEvent, deliveryId: string) => void;
  onRejected: (reason: string) => void;
};

export type AddonServer = {
  /** Resolves with the query of the next request to `/callback`. */
  nextCallback(): Promise<URLSearchParams>;
  close(): Promise<void>;
};

const CALLBACK_PAGE =
  "<!doctype html><title>Sample addon</title><h1>Sample addon</h1><p>Back in the terminal now: you can close this tab.</p>";

/**
 * The addon's own HTTP server on 127.0.0.1: `GET /callback`, where the admin's browser lands
 * after the consent page, and `POST /webhooks`, the signed deliveries.
 */
export async function startAddonServer(options: AddonServerOptions): Promise<AddonServer> {
  const waiting: Array<(query: URLSearchParams) => void> = [];
  // Retries carry the same delivery id (docs/webhooks.md, "For receivers", obligation 3).
  const seenDeliveries = new Set<string>();

  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://addon.invalid");
    if (request.method === "GET" && url.pathname === "/callback") {
      for (const resolve of waiting.splice(0)) resolve(url.searchParams);
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(CALLBACK_PAGE);
      return;
    }
    if (request.method === "POST" && url.pathname === "/webhooks") {
      const rawBody = await readBody(request);
      const verdict = verifyWebhookSignature({
        secret: options.webhookSecret,
        rawBody,
        timestamp: header(request, "x-service-timestamp"),
        signature: header(request, "x-service-signature"),
      });
      if (!verdict.ok) {
        response.writeHead(400).end();
        options.onRejected(verdict.reason);
        return;
      }
      // Answer first (a delivery must get its 2xx within 10 seconds), then do the work.
      response.writeHead(204).end();
      const deliveryId = header(request, "x-service-delivery") ?? "";
      if (seenDeliveries.has(deliveryId)) return;
      seenDeliveries.add(deliveryId);
      options.onEvent(JSON.parse(rawBody.toString("utf8")) as ChangeEvent, deliveryId);
      return;
    }
    response.writeHead(404).end();
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, "127.0.0.1", resolve);
  });
  return {
    nextCallback: () => new Promise((resolve) => waiting.push(resolve)),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === "string" ? value : undefined;
}

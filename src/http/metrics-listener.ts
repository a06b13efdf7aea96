import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { Metrics } from "../metrics/metrics.js";
import type { Readiness } from "./health.js";

/** Until the process serves, and once it drains on SIGTERM, it is not ready whatever answers. */
type Phase = "starting" | "serving" | "draining";

export type MetricsListener = {
  port: number;
  /** The API or the worker has started: /readyz now asks the dependencies. */
  markServing(): void;
  /** SIGTERM: /readyz answers 503 from now on, while in-flight work finishes. */
  markDraining(): void;
  /** Stops listening, then closes the metrics it served. */
  close(): Promise<void>;
};

export type MetricsListenerOptions = {
  metrics: Metrics;
  readiness: () => Promise<Readiness>;
  host: string;
  port: number;
  logger: Logger;
};

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "Content-Type": "application/json; charset=utf-8" });
  response.end(JSON.stringify(body));
}

/**
 * The listener of METRICS_PORT, apart from the API's port: `GET /metrics` in the Prometheus text
 * format, `/healthz` and `/readyz`, for every process kind (the worker listens on nothing else).
 * A bare node:http server: three routes need no framework.
 */
export async function startMetricsListener(
  options: MetricsListenerOptions,
): Promise<MetricsListener> {
  let phase: Phase = "starting";
  const { metrics, readiness, logger } = options;

  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? "/").split("?", 1)[0];
    if (request.method !== "GET" && request.method !== "HEAD") {
      sendJson(response, 405, { status: "method not allowed" });
      return;
    }
    if (path === "/healthz") {
      sendJson(response, 200, { status: "ok" });
    } else if (path === "/readyz") {
      if (phase !== "serving") {
        sendJson(response, 503, { status: phase, checks: {} });
        return;
      }
      const { ready, body } = await readiness();
      sendJson(response, ready ? 200 : 503, body);
    } else if (path === "/metrics") {
      const text = await metrics.scrape();
      response.writeHead(200, { "Content-Type": metrics.contentType });
      response.end(text);
    } else {
      sendJson(response, 404, { status: "not found" });
    }
  };

  const server = createServer((request, response) => {
    answer(request, response).catch((err: unknown) => {
      logger.error({ err, url: request.url }, "metrics listener failed to answer");
      if (!response.headersSent) sendJson(response, 500, { status: "error" });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  logger.info({ host: options.host, port }, "metrics listening");
  return {
    port,
    markServing() {
      if (phase === "starting") phase = "serving";
    },
    markDraining() {
      phase = "draining";
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      metrics.close();
    },
  };
}

import { createServer, type Server } from "node:http";

/** An OTLP attribute value in the JSON encoding: one of these fields is set. */
type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
};
type KeyValue = { key: string; value: AnyValue };

/** A span as OTLP/HTTP's JSON encoding carries it (ids in hex). */
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
};

type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
};

/** A received span, its attributes and its service's name read out. */
export type ReceivedSpan = Omit<OtlpSpan, "attributes"> & {
  service: string | undefined;
  attributes: Record<string, string | number | boolean | undefined>;
};

function decodedValue(value: AnyValue): string | number | boolean | undefined {
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue;
}

function attributesOf(attributes: KeyValue[] = []) {
  return Object.fromEntries(attributes.map(({ key, value }) => [key, decodedValue(value)]));
}

/**
 * A real OTLP/HTTP trace receiver on 127.0.0.1, as a collector would be: it decodes each JSON
 * export sent to /v1/traces and keeps its spans.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server: Server | undefined;
  private port = 0;

  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const json = request.headers["content-type"]?.startsWith("application/json") === true;
        if (request.method !== "POST" || request.url !== "/v1/traces" || !json) {
          response.writeHead(415).end();
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest;
        for (const { resource, scopeSpans = [] } of body.resourceSpans ?? []) {
          const service = attributesOf(resource?.attributes)["service.name"];
          for (const { spans = [] } of scopeSpans) {
            for (const span of spans) {
              this.spans.push({
                ...span,
                service: typeof service === "string" ? service : undefined,
                attributes: attributesOf(span.attributes),
              });
            }
          }
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
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

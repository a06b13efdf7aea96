import { AsyncLocalStorage } from "node:async_hooks";
import type { Context, Span as OtelSpan, SpanContext } from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Span, SpanAttributes, SpanOptions, Tracer } from "./tracer.js";

// runtime.ts imports this file only when an OTLP endpoint is set, and the packages are imported
// here when the tracer is built: a static import would be hoisted to the top of the bundle
// (dist/svc.mjs), which leaves them outside, and read at every start.

type TracingSettings = NonNullable<Config["tracing"]>;

/** W3C Trace Context, version 00: `00-<trace id>-<parent id>-<flags>`. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context a traceparent names; undefined when it is malformed or all zeros. */
function spanContextOf(traceparent: string): SpanContext | undefined {
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null) return undefined;
  const [, traceId = "", spanId = "", flags = ""] = match;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}

function traceparentOf({ traceId, spanId, traceFlags }: SpanContext): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

function definedAttributes(attributes: SpanAttributes = {}) {
  return Object.fromEntries(
    Object.entries(attributes).filter(
      (entry): entry is [string, string | number | boolean] => entry[1] !== undefined,
    ),
  );
}

/** The exporter, with each failed export logged: otherwise a collector away loses spans unseen. */
function loggingFailures(exporter: SpanExporter, logger: Logger): SpanExporter {
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.error !== undefined) {
          logger.warn({ err: result.error, spans: spans.length }, "trace export failed");
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/**
 * An OpenTelemetry tracer exporting over OTLP/HTTP (JSON), in batches. The current span travels
 * in an AsyncLocalStorage of this tracer's own: nothing is registered globally.
 */
export async function createOtelTracer(settings: TracingSettings, logger: Logger): Promise<Tracer> {
  const [
    { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace },
    { OTLPTraceExporter },
    { resourceFromAttributes },
    { AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TracerProvider },
  ] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace"),
  ]);
  const kinds = { server: SpanKind.SERVER, client: SpanKind.CLIENT, internal: SpanKind.INTERNAL };
  const exporter = new OTLPTraceExporter({
    url: settings.tracesUrl,
    headers: settings.headers,
    timeoutMillis: settings.requestTimeoutMs,
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": settings.serviceName }),
    // Every trace, unless a caller's traceparent says it is not sampled; not OTEL_TRACES_SAMPLER,
    // which only config.ts would read.
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: loggingFailures(exporter, logger),
        scheduledDelayMillis: settings.scheduleDelayMs,
        exportTimeoutMillis: settings.exportTimeoutMs,
        maxQueueSize: settings.maxQueueSize,
        maxExportBatchSize: settings.maxExportBatchSize,
      }),
    ],
  });
  const tracer = provider.getTracer("workspace-service");
  const current = new AsyncLocalStorage<Context>();

  const wrap = (span: OtelSpan, parent: Context): Span => {
    const context = trace.setSpan(parent, span);
    let ended = false;
    return {
      traceparent: traceparentOf(span.spanContext()),
      run: (fn) => current.run(context, fn),
      setAttributes: (attributes) => span.setAttributes(definedAttributes(attributes)),
      addLink(traceparent) {
        const linked = spanContextOf(traceparent);
        if (linked !== undefined) span.addLink({ context: linked });
      },
      fail(error) {
        const message = error instanceof Error ? error.message : String(error);
        span.recordException(error instanceof Error ? error : message);
        span.setStatus({ code: SpanStatusCode.ERROR, message });
      },
      end() {
        if (ended) return;
        ended = true;
        span.end();
      },
    };
  };

  const start = (name: string, options: SpanOptions, parent: Context) =>
    wrap(
      tracer.startSpan(
        name,
        {
          kind: kinds[options.kind],
          attributes: definedAttributes(options.attributes),
          root: options.parent === "root",
        },
        parent,
      ),
      parent,
    );

  const parentOf = (parent: SpanOptions["parent"]): Context => {
    if (parent === "root") return ROOT_CONTEXT;
    if (parent === undefined) return current.getStore() ?? ROOT_CONTEXT;
    const remote = spanContextOf(parent);
    return remote === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, remote);
  };

  return {
    startSpan: (name, options) => start(name, options, parentOf(options.parent)),
    startChildSpan(name, options) {
      const parent = current.getStore();
      return parent === undefined ? undefined : start(name, options, parent);
    },
    close: () => provider.shutdown(),
  };
}

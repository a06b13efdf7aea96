import { AsyncResource } from "node:async_hooks";
import type pg from "pg";
import { endWith, type SpanAttributes, type Tracer } from "../tracing/tracer.js";

type Query = (...args: unknown[]) => unknown;

/** `SELECT`, `INSERT`, `WITH`, `BEGIN`...: the statement's first word, the span's name. */
function operationOf(text: string): string {
  return /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? "SQL";
}

function statementSpanOf(tracer: Tracer, text: string, target: SpanAttributes) {
  const operation = operationOf(text);
  return tracer.startChildSpan(operation, {
    kind: "client",
    attributes: { ...target, "db.operation.name": operation, "db.query.text": text },
  });
}

/** The client's queries (text or config, with or without a callback), each in a span. */
function traceQueries(client: pg.PoolClient, tracer: Tracer, target: SpanAttributes): void {
  const query = client.query.bind(client) as Query;
  const traced: Query = (...args) => {
    const [first] = args;
    const text = typeof first === "string" ? first : (first as { text?: unknown } | null)?.text;
    const span = typeof text === "string" ? statementSpanOf(tracer, text, target) : undefined;
    if (span === undefined) return query(...args);
    const callback = args.at(-1);
    if (typeof callback !== "function") return endWith(span, query(...args) as Promise<unknown>);
    const ending = (error: unknown, result: unknown) => {
      if (error) span.fail(error);
      span.end();
      callback(error, result);
    };
    return query(...args.slice(0, -1), ending);
  };
  client.query = traced as pg.PoolClient["query"];
}

/**
 * Every statement the pool runs gets a span under the current one: each client is wrapped as the
 * pool opens it, and a connection handed out later (freed by another request) reaches the
 * caller in the caller's context, so the statement is not counted in the other's trace.
 */
export function traceStatements(pool: pg.Pool, tracer: Tracer, target: SpanAttributes): void {
  pool.on("connect", (client) => traceQueries(client, tracer, target));
  const connect = pool.connect.bind(pool) as (callback?: (...args: unknown[]) => void) => unknown;
  const inCallersContext = (callback?: (...args: unknown[]) => void) =>
    callback === undefined ? connect() : connect(AsyncResource.bind(callback));
  pool.connect = inCallersContext as pg.Pool["connect"];
}

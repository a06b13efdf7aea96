// What the service's seams (requests, SQL, Redis, delivery attempts) see of tracing. Nothing here
// imports OpenTelemetry: with tracing off the process holds no tracer and loads none of it.

/** What a span carries; an undefined value is left out. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export type SpanOptions = {
  kind: "server" | "client" | "internal";
  attributes?: SpanAttributes;
  /**
   * The span's parent: a W3C traceparent to continue (a caller's header), `root` for a trace of
   * its own, or by default the span current where it starts.
   */
  parent?: string | "root";
};

export type Span = {
  /** This span as a W3C traceparent, to be stored with what it causes. */
  readonly traceparent: string;
  /** Runs `fn` with this span current: the spans started inside are its children. */
  run<T>(fn: () => T): T;
  setAttributes(attributes: SpanAttributes): void;
  /** Links this span to the one a stored W3C traceparent names (a malformed one is ignored). */
  addLink(traceparent: string): void;
  /** Marks the span failed by this error. */
  fail(error: unknown): void;
  /** Ends the span; later calls do nothing. */
  end(): void;
};

/** Built once per process when an OTLP endpoint is set, passed to the seams, closed last. */
export type Tracer = {
  startSpan(name: string, options: SpanOptions): Span;
  /**
   * A span for one call the current span makes (a statement, a command); undefined outside any
   * span, so the loops that poll in the background leave no trace of their own.
   */
  startChildSpan(name: string, options: SpanOptions): Span | undefined;
  /** Sends the spans still waiting, then stops. */
  close(): Promise<void>;
};

/** Runs `fn` in a span of its own, ended when `fn` settles and marked failed when it throws. */
export async function inSpan<T>(span: Span, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await span.run(() => fn(span));
  } catch (error) {
    span.fail(error);
    throw error;
  } finally {
    span.end();
  }
}

/** A promise's outcome recorded on a span it ends: the call a statement or command span covers. */
export function endWith<T>(span: Span, outcome: Promise<T>): Promise<T> {
  return outcome.then(
    (result) => {
      span.end();
      return result;
    },
    (error: unknown) => {
      span.fail(error);
      span.end();
      throw error;
    },
  );
}

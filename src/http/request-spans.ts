import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Span, Tracer } from "../tracing/tracer.js";

declare module "fastify" {
  interface FastifyRequest {
    /** This request's span as a W3C traceparent (tracing on): a change it records keeps it. */
    traceContext: string | null;
  }
}

/**
 * With a tracer, each request runs in a server span, from its arrival to its answer, continuing a
 * caller's `traceparent` header when it sends one. Registered before every other hook.
 */
export function registerRequestSpans(app: FastifyInstance, tracer: Tracer | undefined): void {
  app.decorateRequest("traceContext", null);
  if (tracer === undefined) return;
  const spans = new WeakMap<FastifyRequest, Span>();
  app.addHook("onRequest", (request, _reply, done) => {
    const route = request.routeOptions.url;
    const { traceparent } = request.headers;
    const span = tracer.startSpan(
      route === undefined ? request.method : `${request.method} ${route}`,
      {
        kind: "server",
        parent: typeof traceparent === "string" ? traceparent : "root",
        attributes: {
          "http.request.method": request.method,
          "http.route": route,
          "url.path": request.url.split("?", 1)[0],
          "request.id": request.id,
        },
      },
    );
    spans.set(request, span);
    request.traceContext = span.traceparent;
    // The later hooks and the handler run from `done`, so inside the span's context.
    span.run(done);
  });
  app.addHook("onResponse", async (request: FastifyRequest, reply: FastifyReply) => {
    const span = spans.get(request);
    if (span === undefined) return;
    span.setAttributes({ "http.response.status_code": reply.statusCode });
    if (reply.statusCode >= 500) span.fail(`answered ${reply.statusCode}`);
    span.end();
  });
  app.addHook("onRequestAbort", async (request: FastifyRequest) => {
    const span = spans.get(request);
    span?.fail("the client closed the connection before the answer");
    span?.end();
  });
}

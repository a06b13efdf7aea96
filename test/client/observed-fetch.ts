/** One request the client sent, and what came back. */
export type Exchange = {
  method: string;
  path: string;
  authorization: string | null;
  idempotencyKey: string | null;
  status: number;
  requestId: string | null;
  retryAfter: string | null;
  replayed: string | null;
  /** performance.now() when the request left and when its answer came. */
  sentAt: number;
  answeredAt: number;
};

/**
 * The real fetch, recording each exchange: what the client put on the wire, seen from outside.
 * `before` runs ahead of each request (another user of the same token, say).
 */
export function observedFetch(before?: () => Promise<void>): {
  fetch: typeof fetch;
  exchanges: Exchange[];
} {
  const exchanges: Exchange[] = [];
  const observed: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    await before?.();
    const sentAt = performance.now();
    const response = await fetch(request);
    exchanges.push({
      method: request.method,
      path: new URL(request.url).pathname,
      authorization: request.headers.get("authorization"),
      idempotencyKey: request.headers.get("idempotency-key"),
      status: response.status,
      requestId: response.headers.get("x-request-id"),
      retryAfter: response.headers.get("retry-after"),
      replayed: response.headers.get("idempotent-replayed"),
      sentAt,
      answeredAt: performance.now(),
    });
    return response;
  };
  return { fetch: observed, exchanges };
}

import { retryAfterSecondsOf } from "./api-error.js";

type Send = (request: Request) => Promise<Response>;

/** A Retry-After longer than this is waited this long: a retry still comes, only sooner. */
const LONGEST_WAIT_SECONDS = 60;
/** The wait when a 429 has no readable Retry-After. */
const DEFAULT_WAIT_SECONDS = 1;

/** Resolves after `ms`, or rejects with the signal's reason once the caller aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function waitSecondsFor(response: Response): number {
  return Math.min(
    retryAfterSecondsOf(response.headers) ?? DEFAULT_WAIT_SECONDS,
    LONGEST_WAIT_SECONDS,
  );
}

/**
 * Sends a request answered 429 again after its Retry-After, up to `maxRetries` times. Only 429: a
 * rate-limited request never reached the route, so it cannot write twice; a 503 may follow a lost
 * commit's answer, so the caller decides (`ApiError.retryAfterSeconds`).
 */
export function retryRateLimited(send: Send, maxRetries: number): Send {
  return async (request) => {
    for (let retries = 0; ; retries++) {
      // A body can be read only once: each attempt sends a copy, so the next one still has it.
      const response = await send(request.clone());
      if (response.status !== 429 || retries >= maxRetries) return response;
      await response.body?.cancel();
      await wait(waitSecondsFor(response) * 1000, request.signal);
    }
  };
}

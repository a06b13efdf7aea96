import { lookup as systemLookup } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import type { Agent, buildConnector } from "undici";
import type { DeliveryAttemptOutcome } from "../metrics/recorder.js";
import { isForbiddenAddress, type WebhookNetwork } from "./url-policy.js";

/**
 * The HTTP POST that delivers one webhook (spec, "Events": a 2xx within 10 seconds is success).
 * No redirects, a capped response, and forbidden addresses refused before any connection.
 */

interface WebhookRequest {
  url: string;
  /** The exact bytes that were signed; sent unchanged. */
  body: Buffer;
  headers: Record<string, string>;
}

interface WebhookPostOptions extends WebhookNetwork {
  /** Bound on the whole exchange: connect, headers and body. */
  timeoutMs?: number;
}

export interface DeliveryOutcome {
  ok: boolean;
  /** How the attempt ended: a 2xx, another status, the deadline, a refused address, the network. */
  kind: DeliveryAttemptOutcome;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  responseSnippet: string | null;
}

const DEFAULT_TIMEOUT_MS = 10_000;

type Undici = typeof import("undici");

// A small body is drained so the keep-alive connection can be reused; anything bigger is cut off
// and its connection destroyed, so a receiver streaming megabytes costs us nothing.
const MAX_RESPONSE_BYTES = 64 * 1024;
const SNIPPET_BYTES = 1024;

/** Raised by the connector; its message is what ends up in the attempt's error. */
class ForbiddenAddressError extends Error {
  readonly code = "ERR_WEBHOOK_FORBIDDEN_ADDRESS";

  constructor(readonly address: string) {
    super(`connection to forbidden address ${address} refused`);
    this.name = "ForbiddenAddressError";
  }
}

/**
 * Drops forbidden addresses from name resolution so a host with both public and private addresses
 * is reached on a public one, and a host with only private ones fails before any packet is sent.
 */
const allowedOnlyLookup =
  (network: WebhookNetwork): LookupFunction =>
  (hostname, options, callback) => {
    systemLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        callback(error, []);
        return;
      }
      const allowed = addresses.filter((entry) => !isForbiddenAddress(entry.address, network));
      const [first] = allowed;
      if (first === undefined) {
        const refused = addresses[0]?.address ?? hostname;
        callback(new ForbiddenAddressError(refused), []);
        return;
      }
      // Node asks for all addresses when it races IPv4 and IPv6 (autoSelectFamily), otherwise one.
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };

/**
 * A connector that judges the destination before connecting, for every URL form: `net.connect`
 * skips `lookup` for an IP literal, so literals go through it here. Otherwise a closed port
 * ("refused") would read apart from an open one ("forbidden") in the delivery log: a port scanner.
 */
function buildAllowedOnlyConnector(
  undici: Undici,
  network: WebhookNetwork,
): buildConnector.connector {
  const lookup = allowedOnlyLookup(network);
  const connectTcpOrTls = undici.buildConnector({ lookup });
  /**
   * Also checks the peer address of the connected socket, a backstop should the lookup ever be
   * bypassed; for https the TLS handshake runs on the checked socket, so no ClientHello reaches a
   * forbidden host.
   */
  const connectChecked: buildConnector.connector = (options, callback) => {
    const defaultPort = options.protocol === "https:" ? "443" : "80";
    connectTcpOrTls(
      { ...options, protocol: "http:", port: options.port || defaultPort, httpSocket: undefined },
      (...result) => {
        const [error, socket] = result;
        if (error !== null) {
          callback(error, null);
          return;
        }
        const address = socket.remoteAddress;
        if (address === undefined || isForbiddenAddress(address, network)) {
          socket.destroy();
          callback(new ForbiddenAddressError(address ?? "unknown"), null);
          return;
        }
        if (options.protocol !== "https:") {
          callback(null, socket);
          return;
        }
        connectTcpOrTls({ ...options, httpSocket: socket }, callback);
      },
    );
  };
  return (options, callback) => {
    // undici hands over IPv6 literals without their brackets.
    if (isIP(options.hostname) === 0) {
      connectChecked(options, callback);
      return;
    }
    lookup(options.hostname, { all: true }, (error) => {
      if (error) callback(error, null);
      else connectChecked(options, callback);
    });
  };
}

// A pool of keep-alive connections per origin, so a receiver's connections are reused (the
// connector checks each new one). Connections per origin are not capped: the worker's concurrency
// bounds the requests in flight, and a lower cap would queue deliveries behind the 10 s limit.
const AGENT_OPTIONS = {
  keepAliveTimeout: 10_000,
  keepAliveMaxTimeout: 60_000,
} as const;

function describeTimeout(timeoutMs: number): string {
  return timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} s` : `${timeoutMs} ms`;
}

function describeError(error: unknown): string {
  if (error instanceof ForbiddenAddressError) return error.message;
  if (!(error instanceof Error)) return `request failed: ${String(error)}`;
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined;
  const detail =
    code !== undefined && !error.message.includes(code)
      ? `${error.message} (${code})`
      : error.message;
  return `request failed: ${detail}`;
}

function decodeSnippet(bytes: Buffer): string {
  // stream: true holds back a multi-byte character cut at the 1 KiB boundary instead of
  // emitting a replacement character for it.
  return new TextDecoder("utf-8").decode(bytes.subarray(0, SNIPPET_BYTES), { stream: true });
}

/** One POST through `agent`, the whole exchange bounded by `timeoutMs`. */
async function postWith(
  undici: Undici,
  agent: Agent,
  webhook: WebhookRequest,
  timeoutMs: number,
): Promise<DeliveryOutcome> {
  const signal = AbortSignal.timeout(timeoutMs);
  const startedAt = performance.now();
  let statusCode: number | null = null;
  const received: Buffer[] = [];
  let receivedBytes = 0;

  const outcome = (kind: DeliveryAttemptOutcome, error: string | null): DeliveryOutcome => ({
    ok: error === null,
    kind,
    statusCode,
    error,
    durationMs: Math.round(performance.now() - startedAt),
    responseSnippet: statusCode === null ? null : decodeSnippet(Buffer.concat(received)),
  });

  try {
    const response = await undici.request(webhook.url, {
      method: "POST",
      headers: webhook.headers,
      body: webhook.body,
      dispatcher: agent,
      signal,
    });
    statusCode = response.statusCode;
    try {
      for await (const chunk of response.body) {
        const bytes = chunk as Buffer;
        received.push(bytes);
        receivedBytes += bytes.length;
        if (receivedBytes >= MAX_RESPONSE_BYTES) break;
      }
    } finally {
      // Leaving the loop early (cap reached) or on error must release the socket, not leave the
      // rest of the body buffered.
      if (!response.body.destroyed) response.body.destroy();
    }
  } catch (error) {
    // Our own signal is the only thing that aborts, so its state says "timed out" without
    // inspecting which error class undici surfaced it as.
    if (signal.aborted) return outcome("timeout", `timed out after ${describeTimeout(timeoutMs)}`);
    const kind = error instanceof ForbiddenAddressError ? "refused_address" : "network_error";
    return outcome(kind, describeError(error));
  }

  if (statusCode >= 200 && statusCode < 300) return outcome("delivered", null);
  if (statusCode >= 300 && statusCode < 400) {
    return outcome("failed_status", `HTTP ${statusCode} (redirects are not followed)`);
  }
  return outcome("failed_status", `HTTP ${statusCode}`);
}

export type WebhookHttpClient = {
  /**
   * POSTs the given bytes and headers once. Never throws: every failure is an outcome with
   * `error` set, so the caller records it as an attempt. The `User-Agent` is the caller's to set.
   */
  post(webhook: WebhookRequest, options: WebhookPostOptions): Promise<DeliveryOutcome>;
  /** Closes its agents, waiting for the requests in flight. */
  close(): Promise<void>;
};

/** An HTTP client with one agent per network policy (a process has one), each checking its connections. */
export function createWebhookHttpClient(): WebhookHttpClient {
  // Loaded by the first delivery rather than at start: a tenth of a second of the embedded
  // default's start, for a process that may not deliver for a while.
  let undiciLoading: Promise<Undici> | undefined;
  const agents = new Map<string, Agent>();
  const agentFor = (undici: Undici, network: WebhookNetwork): Agent => {
    const key = `${network.production}|${(network.allowedPrivateRanges ?? []).join(",")}`;
    let agent = agents.get(key);
    if (agent === undefined) {
      const connect = buildAllowedOnlyConnector(undici, network);
      agent = new undici.Agent({ ...AGENT_OPTIONS, connect });
      agents.set(key, agent);
    }
    return agent;
  };
  return {
    async post(webhook, options) {
      // Before the clock starts: loading undici is not the receiver's time.
      undiciLoading ??= import("undici");
      const undici = await undiciLoading;
      const agent = agentFor(undici, options);
      return postWith(undici, agent, webhook, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    },
    async close() {
      const open = [...agents.values()];
      agents.clear();
      await Promise.all(open.map((agent) => agent.close()));
    },
  };
}

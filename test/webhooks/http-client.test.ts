import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createWebhookHttpClient } from "../../src/webhooks/http-client.js";
import { isForbiddenAddress, webhookNetworkOf } from "../../src/webhooks/url-policy.js";
import { TEST_SECRET_KEY } from "../support/app.js";
import { closedPort, startConnectionCounter } from "../support/ports.js";

interface ReceivedRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

interface Receiver {
  origin: string;
  port: number;
  requests: ReceivedRequest[];
  close: () => Promise<void>;
}

const openReceivers: Receiver[] = [];

/** A real HTTP server on 127.0.0.1 that records every request, then answers with `respond`. */
async function startReceiver(
  respond: (response: ServerResponse, request: IncomingMessage) => void,
  host = "127.0.0.1",
): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    requests.push({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body: Buffer.concat(chunks),
    });
    respond(response, request);
  });
  server.listen(0, host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    origin: `http://${host}:${port}`,
    port,
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
  openReceivers.push(receiver);
  return receiver;
}

afterEach(async () => {
  await Promise.all(openReceivers.splice(0).map((receiver) => receiver.close()));
});

const client = createWebhookHttpClient();
const postWebhook = client.post;

afterAll(async () => {
  await client.close();
});

const body = Buffer.from('{"id":1,"type":"change.created","note":"caf\u00e9"}', "utf8");
const headers = {
  "content-type": "application/json",
  "x-service-event": "change.created",
  "x-service-delivery": "5f0c6a3e-8d55-4d7e-9d8f-0b4f2e1f7a10",
  "x-service-timestamp": "1700000000",
  "x-service-signature": "sha256=abc123",
  "user-agent": "workspace-service-webhooks/1.0",
};
const development = { production: false };

describe("postWebhook", () => {
  it("sends the exact bytes and headers and reports a 2xx as delivered", async () => {
    const receiver = await startReceiver((response) => {
      response.writeHead(202, { "content-type": "text/plain" }).end("accepted, thanks");
    });

    const outcome = await postWebhook(
      { url: `${receiver.origin}/hooks?x=1`, body, headers },
      development,
    );

    expect(outcome).toMatchObject({
      kind: "delivered",
      ok: true,
      statusCode: 202,
      error: null,
      responseSnippet: "accepted, thanks",
    });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    expect(received?.method).toBe("POST");
    expect(received?.url).toBe("/hooks?x=1");
    expect(received?.body.equals(body)).toBe(true);
    expect(received?.headers).toMatchObject({
      ...headers,
      "content-length": String(body.length),
    });
  });

  it("reports a 500 as a failure with its status and the start of the body", async () => {
    const receiver = await startReceiver((response) => {
      response.writeHead(500).end("database exploded");
    });

    const outcome = await postWebhook({ url: receiver.origin, body, headers }, development);

    expect(outcome).toMatchObject({
      kind: "failed_status",
      ok: false,
      statusCode: 500,
      error: "HTTP 500",
      responseSnippet: "database exploded",
    });
  });

  it("reports an empty 4xx body as an empty snippet", async () => {
    const receiver = await startReceiver((response) => {
      response.writeHead(410).end();
    });

    const outcome = await postWebhook({ url: receiver.origin, body, headers }, development);

    expect(outcome).toMatchObject({
      kind: "failed_status",
      ok: false,
      statusCode: 410,
      error: "HTTP 410",
      responseSnippet: "",
    });
  });

  it("never follows a redirect", async () => {
    const target = await startReceiver((response) => {
      response.writeHead(200).end("should never be reached");
    });
    const redirecting = await startReceiver((response) => {
      response.writeHead(302, { location: `${target.origin}/elsewhere` }).end("moved");
    });

    const outcome = await postWebhook({ url: redirecting.origin, body, headers }, development);

    expect(outcome).toMatchObject({
      kind: "failed_status",
      ok: false,
      statusCode: 302,
      error: "HTTP 302 (redirects are not followed)",
      responseSnippet: "moved",
    });
    expect(redirecting.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
  });

  it("times out when the response headers come too late, and hangs up", async () => {
    // The receiver never answers; only the client's limit can end the exchange.
    let hungUp: Promise<unknown> = Promise.resolve();
    const receiver = await startReceiver((response) => {
      hungUp = once(response, "close");
    });

    const outcome = await postWebhook(
      { url: receiver.origin, body, headers },
      { production: false, timeoutMs: 300 },
    );

    expect(outcome).toMatchObject({
      kind: "timeout",
      ok: false,
      statusCode: null,
      error: "timed out after 300 ms",
      responseSnippet: null,
    });
    // The connection is given up, not left waiting for an answer that may never come.
    await hungUp;
    expect(receiver.requests).toHaveLength(1);
  });

  it("times out when a 2xx body does not finish within the limit", async () => {
    const receiver = await startReceiver((response) => {
      // Headers and a first chunk at once, then the body stalls.
      response.writeHead(200, { "content-length": "1000" });
      response.write("partial");
    });

    const outcome = await postWebhook(
      { url: receiver.origin, body, headers },
      { production: false, timeoutMs: 300 },
    );

    expect(outcome).toMatchObject({
      kind: "timeout",
      ok: false,
      statusCode: 200,
      error: "timed out after 300 ms",
      responseSnippet: "partial",
    });
  });

  it("reports a refused connection", async () => {
    const receiver = await startReceiver((response) => response.end());
    const url = receiver.origin;
    await receiver.close();
    openReceivers.splice(openReceivers.indexOf(receiver), 1);

    const outcome = await postWebhook({ url, body, headers }, development);

    expect(outcome.kind).toBe("network_error");
    expect(outcome.ok).toBe(false);
    expect(outcome.statusCode).toBeNull();
    expect(outcome.responseSnippet).toBeNull();
    expect(outcome.error).toMatch(/^request failed: .*ECONNREFUSED/);
  });

  it("reports a host that does not resolve", async () => {
    const outcome = await postWebhook(
      { url: "http://receiver.invalid/", body, headers },
      development,
    );

    expect(outcome.kind).toBe("network_error");
    expect(outcome.ok).toBe(false);
    expect(outcome.statusCode).toBeNull();
    expect(outcome.error).toMatch(/^request failed: .*receiver\.invalid/);
  });

  it("reports a URL it cannot send to instead of throwing", async () => {
    const outcome = await postWebhook({ url: "not a url", body, headers }, development);

    expect(outcome).toMatchObject({ ok: false, statusCode: null, responseSnippet: null });
    expect(outcome.error).toMatch(/^request failed: /);
  });

  it("reads only the start of a huge response and hangs up", async () => {
    const total = 50 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, "x");
    let written = 0;
    let serverClosed: Promise<unknown> = Promise.resolve();
    const receiver = await startReceiver((response) => {
      serverClosed = once(response, "close");
      response.writeHead(200, { "content-length": String(total) });
      // Write with backpressure, so `written` counts only what the socket actually accepted.
      const pump = () => {
        while (written < total && !response.destroyed) {
          written += chunk.length;
          if (!response.write(chunk)) {
            response.once("drain", pump);
            return;
          }
        }
        response.end();
      };
      pump();
    });

    const outcome = await postWebhook({ url: receiver.origin, body, headers }, development);
    await serverClosed;

    expect(outcome).toMatchObject({ ok: true, statusCode: 200, error: null });
    expect(outcome.responseSnippet).toBe("x".repeat(1024));
    // The client hung up long before the end: what the kernel buffers on loopback is a few MB
    // at most, nowhere near the 50 MB the server wanted to send.
    expect(written).toBeLessThan(total / 2);
  });

  it("cuts the snippet at 1 KiB without splitting a character", async () => {
    const receiver = await startReceiver((response) => {
      response.writeHead(400, { "content-type": "text/plain; charset=utf-8" });
      response.end("\u20ac".repeat(1000)); // 3 bytes each
    });

    const outcome = await postWebhook({ url: receiver.origin, body, headers }, development);

    expect(outcome.statusCode).toBe(400);
    expect(outcome.responseSnippet).toBe("\u20ac".repeat(341));
  });

  it("refuses a private or reserved address outside production too (only loopback is let in)", async () => {
    // The machine's own address on its network: never public on a test machine.
    const own = Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry !== undefined && !entry.internal && entry.family === "IPv4");
    expect(own, "a non-loopback IPv4 address on this machine").toBeDefined();
    const address = own?.address as string;
    expect(isForbiddenAddress(address, development)).toBe(true);
    const receiver = await startReceiver(
      (response) => response.end("should not be reached"),
      address,
    );

    const outcome = await postWebhook({ url: receiver.origin, body, headers }, development);

    expect(outcome.kind).toBe("refused_address");
    expect(outcome.error).toBe(`connection to forbidden address ${address} refused`);
    expect(receiver.requests).toHaveLength(0);
  });

  describe("in production", () => {
    const production = { production: true };

    it("reaches a private range the operator named", async () => {
      const receiver = await startReceiver((response) => response.end("ok"));

      const outcome = await postWebhook(
        { url: receiver.origin, body, headers },
        { production: true, allowedPrivateRanges: ["127.0.0.0/8"] },
      );

      expect(outcome).toMatchObject({ ok: true, statusCode: 200 });
      expect(receiver.requests).toHaveLength(1);
    });

    it("refuses to connect to a loopback address given as an IP literal", async () => {
      const receiver = await startReceiver((response) => response.end("should not be reached"));

      const outcome = await postWebhook({ url: receiver.origin, body, headers }, production);

      expect(outcome).toMatchObject({
        ok: false,
        statusCode: null,
        error: "connection to forbidden address 127.0.0.1 refused",
        responseSnippet: null,
      });
      expect(receiver.requests).toHaveLength(0);
    });

    it("refuses a name that resolves to loopback, whatever the URL says", async () => {
      const receiver = await startReceiver((response) => response.end("should not be reached"));

      const outcome = await postWebhook(
        { url: `http://localhost:${receiver.port}/hooks`, body, headers },
        production,
      );

      expect(outcome.ok).toBe(false);
      expect(outcome.statusCode).toBeNull();
      expect(outcome.error).toMatch(/^connection to forbidden address (127\.0\.0\.1|::1) refused$/);
      expect(receiver.requests).toHaveLength(0);
    });

    it("refuses v6 spellings of loopback", async () => {
      const receiver = await startReceiver((response) => response.end("should not be reached"));

      const outcome = await postWebhook(
        { url: `http://[::ffff:127.0.0.1]:${receiver.port}/`, body, headers },
        production,
      );

      expect(outcome.ok).toBe(false);
      // Judged as written, before connecting: the URL parser's spelling of ::ffff:127.0.0.1.
      expect(outcome.error).toBe("connection to forbidden address ::ffff:7f00:1 refused");
      expect(receiver.requests).toHaveLength(0);
    });
  });
});

describe("a forbidden address in the delivery log", () => {
  // The policy a production deployment derives from its configuration, not the tests' own.
  const production = webhookNetworkOf(
    loadConfig({ NODE_ENV: "production", SECRET_KEY: TEST_SECRET_KEY }),
  );

  // Every spelling of a loopback receiver: the URL parser rewrites the IPv4 ones to a dotted quad.
  it.each([
    ["a dotted IPv4 literal", "127.0.0.1", (port: number) => `http://127.0.0.1:${port}/`],
    ["a decimal IPv4 literal", "127.0.0.1", (port: number) => `http://2130706433:${port}/`],
    ["a hex IPv4 literal", "127.0.0.1", (port: number) => `http://0x7f000001:${port}/`],
    ["an octal IPv4 literal", "127.0.0.1", (port: number) => `http://0177.0.0.1:${port}/`],
    ["a short IPv4 literal", "127.0.0.1", (port: number) => `http://127.1:${port}/`],
    ["an https IPv4 literal", "127.0.0.1", (port: number) => `https://127.0.0.1:${port}/`],
    ["an IPv6 literal", "::1", (port: number) => `http://[::1]:${port}/`],
    [
      "an IPv4-mapped IPv6 literal",
      "127.0.0.1",
      (port: number) => `http://[::ffff:127.0.0.1]:${port}/`,
    ],
    ["a name resolving to loopback", "127.0.0.1", (port: number) => `http://localhost:${port}/`],
  ])(
    "reads the same for an open and a closed port, with no connection, given %s",
    async (_form, host, urlOf) => {
      const listening = await startConnectionCounter(host);
      try {
        const closed = await closedPort(host);

        const open = await postWebhook({ url: urlOf(listening.port), body, headers }, production);
        const shut = await postWebhook({ url: urlOf(closed), body, headers }, production);

        expect(open.error).toMatch(/^connection to forbidden address \S+ refused$/);
        expect(shut).toMatchObject({
          ok: false,
          statusCode: null,
          error: open.error,
          responseSnippet: null,
        });
        expect(listening.connections()).toBe(0);
      } finally {
        await listening.close();
      }
    },
  );
});

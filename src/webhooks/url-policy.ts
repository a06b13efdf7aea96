import { promises as dns } from "node:dns";
import ipaddr from "ipaddr.js";
import type { Config } from "../config.js";

/**
 * Which webhook URLs may be registered (spec, "Events" → "Registration rules"), and which network
 * addresses a delivery may reach. The address classifier is shared with the delivery client,
 * which repeats the check on the address it actually connected to.
 */

export type WebhookUrlCheck = { ok: true; url: string } | { ok: false; reason: string };

/**
 * Where deliveries may go beyond public unicast: loopback outside production (a receiver on the
 * developer's machine, and the tests'), and the private ranges an operator named on purpose
 * (WEBHOOK_ALLOWED_PRIVATE_RANGES).
 */
export interface WebhookNetwork {
  production: boolean;
  /** CIDRs, e.g. `10.20.0.0/16`, already validated by the configuration. */
  allowedPrivateRanges?: readonly string[];
}

/** The network policy a configuration sets. */
export function webhookNetworkOf(config: Config): WebhookNetwork {
  return {
    production: config.isProduction,
    allowedPrivateRanges: config.webhooks.allowedPrivateRanges,
  };
}

export interface WebhookUrlPolicyOptions extends WebhookNetwork {
  /** Resolves a host name to its addresses; defaults to the system resolver (`dns.lookup`). */
  resolve?: (hostname: string) => Promise<string[]>;
}

// Generous for any real receiver; stops a pasted blob from being stored and echoed back to admins.
const MAX_URL_LENGTH = 2048;

// Outside production a developer may point a webhook at a receiver on their own machine, over
// plain http too.
const LOCAL_HTTP_HOSTS: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The plain-http exception as both the form's hint and the refusal state it. */
const LOCAL_HTTP_RULE = `http only for ${[...LOCAL_HTTP_HOSTS].join(", ")} outside production`;

/** The registration rule in one line, for forms that ask for a webhook URL. */
export function describeWebhookUrlRule(network: WebhookNetwork): string {
  const privateRanges =
    (network.allowedPrivateRanges ?? []).length > 0 ? " or an allowed private range" : "";
  const localHttp = network.production ? "" : `; ${LOCAL_HTTP_RULE}`;
  return `https, to a public host name${privateRanges}${localHttp}; no credentials or #fragment`;
}

// IANA's global unicast block (RFC 4291 §2.4); everything else in the v6 space outside the
// embedded-v4 forms handled below (IPv4-compatible ::/96, IETF-reserved space) is not a receiver.
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR("2000::/3");

// RFC 6052 well-known NAT64 prefix: a DNS64 resolver synthesises these for v4-only hosts, so the
// embedded v4 is what is really reached. The local-use prefix 64:ff9b:1::/48 (RFC 8215) is
// deliberately not unwrapped: it only exists inside an operator's own network.
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");

type IPAddress = ipaddr.IPv4 | ipaddr.IPv6;

function parseAddress(address: string): IPAddress | null {
  // URL hosts bracket IPv6 literals; socket addresses do not.
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  return ipaddr.isValid(bare) ? ipaddr.parse(bare) : null;
}

/**
 * The IPv4 address a v6 address really leads to, for the forms that are only a v6 spelling of a
 * v4 destination: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 6145) and
 * well-known NAT64 (64:ff9b::a.b.c.d).
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = address.range();
  const isEmbedding =
    range === "ipv4Mapped" ||
    range === "rfc6145" ||
    (range === "rfc6052" && address.match(NAT64_WELL_KNOWN));
  if (!isEmbedding) return undefined;
  const [high = 0, low = 0] = address.parts.slice(6);
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** The v4 address a v6 spelling leads to, or the address itself. */
function destinationOf(parsed: IPAddress): IPAddress {
  return parsed instanceof ipaddr.IPv4 ? parsed : (embeddedIPv4(parsed) ?? parsed);
}

function isOrdinaryPublic(parsed: IPAddress): boolean {
  const destination = destinationOf(parsed);
  if (destination instanceof ipaddr.IPv4) return destination.range() === "unicast";
  return destination.range() === "unicast" && destination.match(IPV6_GLOBAL_UNICAST);
}

function isExcepted(parsed: IPAddress, network: WebhookNetwork): boolean {
  const destination = destinationOf(parsed);
  if (!network.production && destination.range() === "loopback") return true;
  return (network.allowedPrivateRanges ?? []).some((cidr) => {
    const [range, bits] = ipaddr.parseCIDR(cidr);
    return range.kind() === destination.kind() && destination.match(range, bits);
  });
}

/**
 * True when a delivery must not reach this address: anything but public unicast, unless `network`
 * excepts it; v6 spellings of a v4 address are judged as v4, 6to4 and Teredo refused (RFC 7526),
 * and an address that does not parse is forbidden. The ranges: docs/webhooks.md.
 */
export function isForbiddenAddress(
  address: string,
  network: WebhookNetwork = { production: true },
): boolean {
  const parsed = parseAddress(address);
  if (parsed === null) return true;
  return !isOrdinaryPublic(parsed) && !isExcepted(parsed, network);
}

async function resolveWithSystem(hostname: string): Promise<string[]> {
  // verbatim keeps the resolver's order, which is the order a connection would try them in.
  const results = await dns.lookup(hostname, { all: true, verbatim: true });
  return results.map((result) => result.address);
}

function isIpLiteral(hostname: string): boolean {
  // The WHATWG parser has already rewritten every IPv4 spelling (decimal, octal, hex, short
  // forms) to a dotted quad and brackets every IPv6 literal, so these two shapes are all of them.
  return hostname.startsWith("[") || ipaddr.IPv4.isValidFourPartDecimal(hostname);
}

function isLocalhostName(hostname: string): boolean {
  // RFC 6761 §6.3: localhost and every name under it are loopback, whatever DNS says; a trailing
  // dot is the same name written fully qualified.
  const name = hostname.replace(/\.+$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

function refuse(reason: string): WebhookUrlCheck {
  return { ok: false, reason };
}

/**
 * Checks a webhook URL at registration. On success returns the URL as the WHATWG parser
 * normalises it, which is what should be stored. A fragment is refused: it is never sent to the
 * receiver, so a URL carrying one is almost always a paste mistake and storing it would mislead.
 */
export async function checkWebhookUrl(
  input: string,
  options: WebhookUrlPolicyOptions,
): Promise<WebhookUrlCheck> {
  if (input.length > MAX_URL_LENGTH) {
    return refuse(`URL is too long (at most ${MAX_URL_LENGTH} characters)`);
  }
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return refuse("URL is not a valid absolute URL");
  }

  const isLocalHttp =
    !options.production && url.protocol === "http:" && LOCAL_HTTP_HOSTS.has(url.hostname);
  if (url.protocol !== "https:" && !isLocalHttp) {
    return refuse(
      options.production ? "URL must use https" : `URL must use https (${LOCAL_HTTP_RULE})`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    return refuse("URL must not contain credentials");
  }
  // An empty fragment ("...#") leaves url.hash empty, but href keeps the "#".
  if (url.href.includes("#")) {
    return refuse("URL must not contain a fragment");
  }

  const reason = await refuseNonPublicHost(url.hostname, options);
  if (reason !== null) return refuse(reason);
  return { ok: true, url: url.href };
}

async function refuseNonPublicHost(
  hostname: string,
  options: WebhookUrlPolicyOptions,
): Promise<string | null> {
  if (isIpLiteral(hostname)) {
    const address = hostname.replace(/^\[|\]$/g, "");
    const parsed = parseAddress(address);
    if (parsed !== null && isExcepted(parsed, options)) return null;
    return isForbiddenAddress(address, options)
      ? `URL points to a private or reserved address (${address})`
      : `URL must use a host name, not an IP address (${address})`;
  }
  if (isLocalhostName(hostname)) {
    return options.production ? `URL must not point to localhost (${hostname})` : null;
  }
  const resolve = options.resolve ?? resolveWithSystem;

  let addresses: string[];
  try {
    addresses = await resolve(hostname);
  } catch (error) {
    const code =
      error instanceof Error && "code" in error && typeof error.code === "string"
        ? `: ${error.code}`
        : "";
    return `URL host does not resolve (${hostname}${code})`;
  }
  if (addresses.length === 0) {
    return `URL host does not resolve (${hostname})`;
  }
  // Every address must be public: a connection may use any of them.
  const forbidden = addresses.find((address) => isForbiddenAddress(address, options));
  if (forbidden !== undefined) {
    return `URL host ${hostname} resolves to a private or reserved address (${forbidden})`;
  }
  return null;
}

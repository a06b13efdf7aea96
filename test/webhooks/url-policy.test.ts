import { describe, expect, it } from "vitest";
import {
  checkWebhookUrl,
  describeWebhookUrlRule,
  isForbiddenAddress,
} from "../../src/webhooks/url-policy.js";

// A resolver standing in for DNS: names map to fixed address lists; anything else fails the way
// dns.lookup does for an unknown name.
const dnsTable: Record<string, string[]> = {
  "hooks.example.com": ["93.184.216.34"],
  "hooks.example.com.": ["93.184.216.34"],
  "v6.example.com": ["2606:4700:4700::1111"],
  "dual.example.com": ["93.184.216.34", "2606:4700:4700::1111"],
  "internal.example.com": ["10.0.0.7"],
  "mixed.example.com": ["93.184.216.34", "192.168.1.10"],
  "metadata.example.com": ["169.254.169.254"],
  "rebind-v6.example.com": ["::ffff:127.0.0.1"],
  "nat64-private.example.com": ["64:ff9b::a00:1"],
  "empty.example.com": [],
};

async function resolve(hostname: string): Promise<string[]> {
  const addresses = dnsTable[hostname];
  if (addresses === undefined) {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  }
  return addresses;
}

const production = { production: true, resolve };
const development = { production: false, resolve };

describe("isForbiddenAddress", () => {
  it.each([
    // IPv4 special ranges
    "127.0.0.1",
    "127.255.255.254",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.0.1",
    "100.64.0.1",
    "100.127.255.255",
    "169.254.169.254",
    "169.254.0.1",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "255.255.255.255",
    "240.0.0.1",
    "192.0.0.8",
    "192.0.2.1",
    "198.51.100.1",
    "203.0.113.1",
    "198.18.0.1",
    "198.19.255.255",
    // Lenient IPv4 spellings, as a resolver or a socket might hand them over
    "2130706433",
    "0177.0.0.1",
    "0x7f.0.0.1",
    "0x7f000001",
    "127.1",
    "10.1",
    // IPv6 special ranges
    "::",
    "::1",
    "fe80::1",
    "fe80::1%eth0",
    "febf::1",
    "fc00::1",
    "fd12:3456:789a::1",
    "ff02::1",
    "ff0e::1",
    "2001:db8::1",
    "100::1",
    "fec0::1",
    "3fff::1",
    // v6 spellings of forbidden v4
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "0:0:0:0:0:ffff:7f00:1",
    "::ffff:0:7f00:1",
    "::127.0.0.1",
    "::7f00:1",
    "64:ff9b::7f00:1",
    "64:ff9b::10.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b:1::1",
    "2002:7f00:1::",
    "2002:a00:1::1",
    "2002:c0a8:101::1",
    // 6to4 and Teredo are refused whatever they embed (deprecated relays)
    "2002:5db8:d822::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    // Outside 2000::/3 and not an embedding form
    "4000::1",
    "::808:808",
    // Not an address at all: fail closed
    "",
    "localhost",
    "example.com",
    "1.2.3.4.5",
    "[::1]",
  ])("forbids %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    "8.8.8.8",
    "93.184.216.34",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.1",
    "100.63.255.255",
    "100.128.0.1",
    "169.253.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:82a::200e",
    // v6 spellings of a public v4 reach that public v4
    "::ffff:8.8.8.8",
    "::ffff:808:808",
    "64:ff9b::8.8.8.8",
  ])("allows %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});

describe("checkWebhookUrl", () => {
  it.each([
    ["https://hooks.example.com/receive", "https://hooks.example.com/receive"],
    ["https://hooks.example.com", "https://hooks.example.com/"],
    ["HTTPS://HOOKS.EXAMPLE.COM/Path?Q=1", "https://hooks.example.com/Path?Q=1"],
    ["https://hooks.example.com:8443/x", "https://hooks.example.com:8443/x"],
    ["https://hooks.example.com:443/x", "https://hooks.example.com/x"],
    ["https://hooks.example.com./x", "https://hooks.example.com./x"],
    ["  https://hooks.example.com/x  ", "https://hooks.example.com/x"],
    ["https://v6.example.com/", "https://v6.example.com/"],
    ["https://dual.example.com/", "https://dual.example.com/"],
  ])("production accepts %s", async (input, normalised) => {
    expect(await checkWebhookUrl(input, production)).toEqual({ ok: true, url: normalised });
  });

  const refusedInProduction: Array<[string, string]> = [
    // scheme
    ["http://hooks.example.com/", "URL must use https"],
    ["http://localhost:3000/", "URL must use https"],
    ["http://127.0.0.1:3000/", "URL must use https"],
    ["ftp://hooks.example.com/", "URL must use https"],
    ["ws://hooks.example.com/", "URL must use https"],
    ["file:///etc/passwd", "URL must use https"],
    ["javascript:alert(1)", "URL must use https"],
    // not absolute / not a URL
    ["/relative/path", "URL is not a valid absolute URL"],
    ["hooks.example.com/path", "URL is not a valid absolute URL"],
    ["", "URL is not a valid absolute URL"],
    ["https://", "URL is not a valid absolute URL"],
    ["https://1.2.3.4.5/", "URL is not a valid absolute URL"],
    // credentials and fragment
    ["https://user:pass@hooks.example.com/", "URL must not contain credentials"],
    ["https://user@hooks.example.com/", "URL must not contain credentials"],
    ["https://:secret@hooks.example.com/", "URL must not contain credentials"],
    ["https://hooks.example.com/#frag", "URL must not contain a fragment"],
    ["https://hooks.example.com/#", "URL must not contain a fragment"],
    // localhost in every spelling
    ["https://localhost/", "URL must not point to localhost (localhost)"],
    ["https://localhost:8443/", "URL must not point to localhost (localhost)"],
    ["https://LOCALHOST/", "URL must not point to localhost (localhost)"],
    ["https://localhost./", "URL must not point to localhost (localhost.)"],
    ["https://api.localhost/", "URL must not point to localhost (api.localhost)"],
    ["https://A.B.LocalHost./", "URL must not point to localhost (a.b.localhost.)"],
    // IPv4 literals, every spelling normalised by the URL parser first
    ["https://127.0.0.1/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://127.0.0.1:8443/x", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://127.0.0.1./", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://2130706433/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://0177.0.0.1/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://0x7f.0.0.1/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://0x7f000001/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://0X7F.1/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://127.1/", "URL points to a private or reserved address (127.0.0.1)"],
    ["https://10.1/", "URL points to a private or reserved address (10.0.0.1)"],
    ["https://%31%30.0.0.1/", "URL points to a private or reserved address (10.0.0.1)"],
    ["https://10.0.0.1/", "URL points to a private or reserved address (10.0.0.1)"],
    ["https://172.16.5.4/", "URL points to a private or reserved address (172.16.5.4)"],
    ["https://192.168.1.1/", "URL points to a private or reserved address (192.168.1.1)"],
    ["https://100.64.0.1/", "URL points to a private or reserved address (100.64.0.1)"],
    [
      "https://169.254.169.254/latest/meta-data/",
      "URL points to a private or reserved address (169.254.169.254)",
    ],
    ["https://0.0.0.0/", "URL points to a private or reserved address (0.0.0.0)"],
    ["https://0/", "URL points to a private or reserved address (0.0.0.0)"],
    ["https://224.0.0.1/", "URL points to a private or reserved address (224.0.0.1)"],
    ["https://255.255.255.255/", "URL points to a private or reserved address (255.255.255.255)"],
    ["https://192.0.2.10/", "URL points to a private or reserved address (192.0.2.10)"],
    ["https://198.18.0.1/", "URL points to a private or reserved address (198.18.0.1)"],
    // IPv6 literals
    ["https://[::1]/", "URL points to a private or reserved address (::1)"],
    ["https://[0:0:0:0:0:0:0:1]/", "URL points to a private or reserved address (::1)"],
    ["https://[::]/", "URL points to a private or reserved address (::)"],
    ["https://[fe80::1]/", "URL points to a private or reserved address (fe80::1)"],
    ["https://[FD00::1]/", "URL points to a private or reserved address (fd00::1)"],
    ["https://[ff02::1]/", "URL points to a private or reserved address (ff02::1)"],
    ["https://[::ffff:127.0.0.1]/", "URL points to a private or reserved address (::ffff:7f00:1)"],
    ["https://[::ffff:7f00:1]/", "URL points to a private or reserved address (::ffff:7f00:1)"],
    [
      "https://[::ffff:a9fe:a9fe]/",
      "URL points to a private or reserved address (::ffff:a9fe:a9fe)",
    ],
    ["https://[::127.0.0.1]/", "URL points to a private or reserved address (::7f00:1)"],
    ["https://[64:ff9b::7f00:1]/", "URL points to a private or reserved address (64:ff9b::7f00:1)"],
    [
      "https://[64:ff9b::10.0.0.1]/",
      "URL points to a private or reserved address (64:ff9b::a00:1)",
    ],
    ["https://[2002:7f00:1::1]/", "URL points to a private or reserved address (2002:7f00:1::1)"],
    ["https://[2002:c0a8:101::]/", "URL points to a private or reserved address (2002:c0a8:101::)"],
    [
      "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
      "URL points to a private or reserved address (2001:0:4136:e378:8000:63bf:3fff:fdd2)",
    ],
    ["https://[2001:db8::1]/", "URL points to a private or reserved address (2001:db8::1)"],
    // Public IP literals are refused too: a receiver is registered by name
    ["https://8.8.8.8/", "URL must use a host name, not an IP address (8.8.8.8)"],
    ["https://134744072/", "URL must use a host name, not an IP address (8.8.8.8)"],
    [
      "https://[2606:4700:4700::1111]/",
      "URL must use a host name, not an IP address (2606:4700:4700::1111)",
    ],
    ["https://[::ffff:8.8.8.8]/", "URL must use a host name, not an IP address (::ffff:808:808)"],
    // Names that resolve somewhere forbidden, or nowhere
    [
      "https://internal.example.com/",
      "URL host internal.example.com resolves to a private or reserved address (10.0.0.7)",
    ],
    [
      "https://mixed.example.com/",
      "URL host mixed.example.com resolves to a private or reserved address (192.168.1.10)",
    ],
    [
      "https://metadata.example.com/",
      "URL host metadata.example.com resolves to a private or reserved address (169.254.169.254)",
    ],
    [
      "https://rebind-v6.example.com/",
      "URL host rebind-v6.example.com resolves to a private or reserved address (::ffff:127.0.0.1)",
    ],
    [
      "https://nat64-private.example.com/",
      "URL host nat64-private.example.com resolves to a private or reserved address (64:ff9b::a00:1)",
    ],
    ["https://nowhere.example.com/", "URL host does not resolve (nowhere.example.com: ENOTFOUND)"],
    ["https://empty.example.com/", "URL host does not resolve (empty.example.com)"],
    // Length cap
    [`https://hooks.example.com/${"a".repeat(2100)}`, "URL is too long (at most 2048 characters)"],
  ];

  it.each(refusedInProduction)("production refuses %s", async (input, reason) => {
    expect(await checkWebhookUrl(input, production)).toEqual({ ok: false, reason });
  });

  it.each([
    ["http://localhost/", "http://localhost/"],
    ["http://localhost:3000/hooks", "http://localhost:3000/hooks"],
    ["http://LOCALHOST:3000/", "http://localhost:3000/"],
    ["http://127.0.0.1:8080/x", "http://127.0.0.1:8080/x"],
    ["http://127.0.0.1/", "http://127.0.0.1/"],
    ["http://[::1]:3000/", "http://[::1]:3000/"],
    // https to public hosts, and to loopback (the developer's own machine)
    ["https://hooks.example.com/x", "https://hooks.example.com/x"],
    ["https://localhost:8443/", "https://localhost:8443/"],
    ["https://127.0.0.1:8443/", "https://127.0.0.1:8443/"],
    ["https://[::1]:8443/", "https://[::1]:8443/"],
  ])("development accepts %s", async (input, normalised) => {
    expect(await checkWebhookUrl(input, development)).toEqual({ ok: true, url: normalised });
  });

  const httpOnlyLocal =
    "URL must use https (http only for localhost, 127.0.0.1, [::1] outside production)";
  it.each([
    ["http://hooks.example.com/", httpOnlyLocal],
    ["http://10.0.0.1/", httpOnlyLocal],
    ["http://localhost.:3000/", httpOnlyLocal],
    ["http://api.localhost:3000/", httpOnlyLocal],
    ["ftp://localhost/", httpOnlyLocal],
    ["http://user:pass@localhost:3000/", "URL must not contain credentials"],
    ["http://user@127.0.0.1:3000/", "URL must not contain credentials"],
    ["https://user:pass@hooks.example.com/", "URL must not contain credentials"],
    ["http://localhost:3000/#x", "URL must not contain a fragment"],
    ["not a url", "URL is not a valid absolute URL"],
    // Private, link-local and reserved addresses are refused in every mode (SSRF).
    ["https://10.0.0.1/", "URL points to a private or reserved address (10.0.0.1)"],
    [
      "https://169.254.169.254/latest",
      "URL points to a private or reserved address (169.254.169.254)",
    ],
    ["https://[fd00::1]/", "URL points to a private or reserved address (fd00::1)"],
    [
      "https://internal.example.com/",
      "URL host internal.example.com resolves to a private or reserved address (10.0.0.7)",
    ],
    [
      "https://metadata.example.com/",
      "URL host metadata.example.com resolves to a private or reserved address (169.254.169.254)",
    ],
    ["https://nowhere.example.com/", expect.stringMatching(/^URL host does not resolve/)],
  ])("development refuses %s", async (input, reason) => {
    expect(await checkWebhookUrl(input, development)).toEqual({ ok: false, reason });
  });

  it("admits a private range only when the operator named it, in any mode", async () => {
    for (const mode of [production, development]) {
      const allowing = { ...mode, allowedPrivateRanges: ["10.0.0.0/29", "fd00::/64"] };
      expect(await checkWebhookUrl("https://internal.example.com/", allowing)).toEqual({
        ok: true,
        url: "https://internal.example.com/",
      });
      expect(await checkWebhookUrl("https://[fd00::1]/", allowing)).toMatchObject({ ok: true });
      // Only that range: the rest of 10/8 and the metadata address stay refused.
      expect(await checkWebhookUrl("https://10.0.0.9/", allowing)).toMatchObject({ ok: false });
      expect(await checkWebhookUrl("https://metadata.example.com/", allowing)).toMatchObject({
        ok: false,
      });
    }
  });

  it("uses the system resolver by default", async () => {
    // *.invalid is guaranteed never to resolve (RFC 6761 §6.4).
    expect(await checkWebhookUrl("https://receiver.invalid/", { production: true })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^URL host does not resolve \(receiver\.invalid/),
    });
  });
});

describe("describeWebhookUrlRule", () => {
  it("names plain http only where the check accepts it", async () => {
    expect(describeWebhookUrlRule(production)).toBe(
      "https, to a public host name; no credentials or #fragment",
    );
    expect(describeWebhookUrlRule(development)).toBe(
      "https, to a public host name; http only for localhost, 127.0.0.1, [::1] outside production; no credentials or #fragment",
    );
    for (const host of ["localhost", "127.0.0.1", "[::1]"]) {
      const url = `http://${host}:3000/`;
      expect(await checkWebhookUrl(url, development), url).toMatchObject({ ok: true });
      expect(await checkWebhookUrl(url, production), url).toMatchObject({ ok: false });
    }
  });

  it("mentions private ranges only when the operator allowed some", () => {
    const allowing = { ...production, allowedPrivateRanges: ["10.0.0.0/29"] };
    expect(describeWebhookUrlRule(allowing)).toContain("or an allowed private range");
  });
});

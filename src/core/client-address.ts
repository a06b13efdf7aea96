import ipaddr from "ipaddr.js";

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const CANONICAL_IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);

/**
 * What every per-address limit counts against: an IPv4 address as it is (an IPv4-mapped IPv6
 * one too), and an IPv6 address by its /64, since one host usually holds a whole /64 and could
 * otherwise take a fresh budget per address.
 */
export function clientAddress(ip: string): string {
  // The socket's own spelling of an IPv4 address is already the key: no parse on each request.
  if (CANONICAL_IPV4.test(ip)) return ip;
  if (!ipaddr.isValid(ip)) return ip;
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...prefix, 0, 0, 0, 0]).toString()}/64`;
}

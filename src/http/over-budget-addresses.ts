import { hash } from "node:crypto";

// Both maps are bounded; past the bound the oldest entry goes, which at worst costs a lookup.
const MAX_ADDRESSES = 100_000;
const MAX_LIVE_TOKENS = 100_000;

function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
  map.set(key, value);
}

const digestOf = (token: string) => hash("sha256", token, "base64url");

/**
 * Lets the rate limiter charge an address past its budget without looking its token up, so
 * invented tokens cost no query; a token seen live here is still looked up
 * (docs/architecture.md, "Over-budget addresses").
 */
export class OverBudgetAddresses {
  private readonly spentUntil = new Map<string, number>();
  private readonly liveTokens = new Map<string, true>();

  constructor(private readonly windowMs: number) {}

  markSpent(address: string): void {
    remember(this.spentUntil, address, Date.now() + this.windowMs, MAX_ADDRESSES);
  }

  markLive(token: string): void {
    remember(this.liveTokens, digestOf(token), true, MAX_LIVE_TOKENS);
  }

  /** The request is to be charged to its address, its token not looked up. */
  chargesAddress(address: string, token: string | null): boolean {
    const until = this.spentUntil.get(address);
    if (until === undefined) return false;
    if (until <= Date.now()) {
      this.spentUntil.delete(address);
      return false;
    }
    return token === null || !this.liveTokens.has(digestOf(token));
  }
}

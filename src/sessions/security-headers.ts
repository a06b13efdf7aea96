import type { FastifyReply } from "fastify";

type Directives = Record<string, string[]>;

/**
 * The pages' Content-Security-Policy: no scripts at all, our own stylesheet, forms posting only
 * to this site, and never framed (`frame-ancestors 'none'`: the consent page must not be
 * clickjacked, RFC 9700 §4.16).
 */
export function pageDirectives(production: boolean, extraFormActions: string[] = []): Directives {
  return {
    "default-src": ["'none'"],
    "style-src": ["'self'"],
    "img-src": ["'self'"],
    "form-action": ["'self'", ...extraFormActions],
    "frame-ancestors": ["'none'"],
    "base-uri": ["'none'"],
    // Plain HTTP is how the service runs on a laptop; only production upgrades.
    ...(production ? { "upgrade-insecure-requests": [] } : {}),
  };
}

function serialize(directives: Directives): string {
  return Object.entries(directives)
    .map(([name, values]) => [name, ...values].join(" "))
    .join("; ");
}

/**
 * A page whose form answers with a redirect to an addon (the consent page) must allow that
 * origin in `form-action`: browsers apply the directive to the redirect after a submission too.
 */
export function allowFormRedirectTo(
  reply: FastifyReply,
  redirectUri: string,
  production: boolean,
): void {
  const origin = new URL(redirectUri).origin;
  reply.header("Content-Security-Policy", serialize(pageDirectives(production, [origin])));
}

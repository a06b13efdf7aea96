type Directives = Record<string, string[]>;

/**
 * The pages' Content-Security-Policy: no scripts at all, our own stylesheet, forms posting only
 * to this site, and never framed (`frame-ancestors 'none'`: the consent page must not be
 * clickjacked, RFC 9700 §4.16). Browsers apply `form-action` to every redirect after a
 * submission, so a form's answer never redirects off this site: a page of ours navigates on.
 */
export function pageDirectives(production: boolean): Directives {
  return {
    "default-src": ["'none'"],
    "style-src": ["'self'"],
    "img-src": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
    "base-uri": ["'none'"],
    // Plain HTTP is how the service runs on a laptop; only production upgrades.
    ...(production ? { "upgrade-insecure-requests": [] } : {}),
  };
}

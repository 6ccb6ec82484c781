import { createHash } from 'node:crypto';
import type { FastifyHelmetOptions } from '@fastify/helmet';

/** What the pages served need beyond the server's own files. */
export interface PagePolicyOptions {
  /**
   * Inline styles (a `style` attribute's value or a `<style>` element's text) allowed by their
   * hash: bull-board's page has a few in its loading placeholder, and nothing else may have any.
   */
  inlineStyles: readonly string[];
}

/**
 * The Content-Security-Policy of every page, as helmet's directives: nothing but this server's
 * own files may load or run, no inline script at all, no inline style but the exact ones listed
 * (so a value that slipped through escaping still could not run or restyle a page), no plugins,
 * no framing (clickjacking), forms and `<base>` to this origin only (bull-board's page sets its base).
 */
function contentSecurityPolicy(options: PagePolicyOptions): Record<string, string[]> {
  const hashes = [...new Set(options.inlineStyles)].map((style) => `'sha256-${createHash('sha256').update(style).digest('base64')}'`);
  // 'unsafe-hashes' lets the hashes match style attributes too; it allows no style not listed.
  const styles = hashes.length > 0 ? ["'self'", "'unsafe-hashes'", ...hashes] : ["'self'"];
  return {
    defaultSrc: ["'self'"],
    styleSrc: styles,
    objectSrc: ["'none'"],
    baseUri: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  };
}

/**
 * The options of `@fastify/helmet`, registered on the root so every answer carries them (refusals
 * and 404s under /ui come from the root's handlers, and the API's JSON loses nothing by them): the
 * policy above, X-Frame-Options for browsers that predate frame-ancestors, nosniff (a file served
 * as text is never run as script), and no Referer, so a run page's address (run ids, filters)
 * never goes to another site through a link. Helmet's other headers are off: the server sets
 * these four and no more.
 */
export function securityHeaders(options: PagePolicyOptions): FastifyHelmetOptions {
  return {
    contentSecurityPolicy: { useDefaults: false, directives: contentSecurityPolicy(options) },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    crossOriginEmbedderPolicy: false,
    crossOriginOpenerPolicy: false,
    crossOriginResourcePolicy: false,
    originAgentCluster: false,
    strictTransportSecurity: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xPoweredBy: false,
    xXssProtection: false,
  };
}

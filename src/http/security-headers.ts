import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** What the pages served need beyond the server's own files. */
export interface PagePolicyOptions {
  /**
   * Inline styles (a `style` attribute's value or a `<style>` element's text) allowed by their
   * hash: bull-board's page has a few in its loading placeholder, and nothing else may have any.
   */
  inlineStyles: readonly string[];
}

/**
 * The Content-Security-Policy of every page: nothing but this server's own files may load or
 * run, no inline script at all, no inline style but the exact ones listed (so a value that
 * slipped through escaping still could not run or restyle a page), no plugins, no framing
 * (clickjacking), forms and `<base>` to this origin only (bull-board's page sets its base).
 */
export function contentSecurityPolicy(options: PagePolicyOptions): string {
  const hashes = [...new Set(options.inlineStyles)].map((style) => `'sha256-${createHash('sha256').update(style).digest('base64')}'`);
  // 'unsafe-hashes' lets the hashes match style attributes too; it allows no style not listed.
  const styles = hashes.length > 0 ? `'self' 'unsafe-hashes' ${hashes.join(' ')}` : "'self'";
  return ["default-src 'self'", `style-src ${styles}`, "object-src 'none'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'"].join('; ');
}

/**
 * A fastify `onSend` hook putting the security headers on an answer: the policy above,
 * X-Frame-Options for browsers that predate frame-ancestors, nosniff (a file served as text is
 * never run as script), and no Referer, so a run page's address (run ids, filters) never goes
 * to another site through a link.
 */
export function securityHeaders(options: PagePolicyOptions) {
  const headers = {
    'content-security-policy': contentSecurityPolicy(options),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.headers(headers);
  };
}

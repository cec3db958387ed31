/**
 * Where the console is served and the headers every one of its responses carries: by the local
 * gateway (infra/local/console-assets.ts) and by CloudFront's response headers policy
 * (infra/console-hosting.ts), so that what is tested locally is what is deployed.
 */

/** The console's base path (Vite's `base`, console/vite.config.ts). */
export const CONSOLE_PATH = '/console/';

/** Vite writes every script, style and image under assets/ with a content hash in its name. */
export const CONSOLE_ASSETS_PATH = `${CONSOLE_PATH}assets/`;

/**
 * Everything from the console's own origin; no inline script or style (the build emits none), no
 * plugins, no framing, no <base> rewriting. The API is on the same origin, hence connect-src 'self'.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The headers of every console response, HSTS aside (CloudFront adds it: the local server is plain HTTP). */
export const CONSOLE_SECURITY_HEADERS = {
  'Content-Security-Policy': CONSOLE_CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
} as const;

/** Hashed file names never change content: a year, never revalidated. */
export const IMMUTABLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';

import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { LoopbackTargets } from '../config/runtime';
import { guardedLookup, refusedLiteralTargetReason, targetPort, TargetRefusedError, type Resolver } from './target-guard';

export interface AttemptRequest {
  /** http: or https: */
  url: string;
  /** The exact bytes to send (utf8). */
  body: string;
  /** content-type, signatures, user-agent...; never repeated in an outcome, since they hold signatures. */
  headers: Record<string, string>;
  /** The whole attempt: connecting, the response's headers and reading the part of its body we keep. */
  timeoutMs: number;
  /** Absent: no loopback target at all. */
  loopback?: LoopbackTargets;
  resolve?: Resolver;
}

export interface AttemptOutcome {
  /** Any 2xx. */
  delivered: boolean;
  /** When a response came. */
  statusCode?: number;
  /** Why it was not delivered. */
  error?: string;
  durationMs: number;
  /** The first RESPONSE_BODY_LIMIT bytes of the response's body, absent when empty. */
  responseBody?: string;
  /** The response's Retry-After, on a 429 or 503. */
  retryAfterSeconds?: number;
}

const RESPONSE_BODY_LIMIT = 4096;

// One pool per process: attempts to the same host:port reuse sockets (each vetted when it opened).
// `timeout` closes a pooled socket idle for a minute (the attempt's own timer covers busy ones).
const agentOptions = { keepAlive: true, maxSockets: 256, scheduling: 'lifo' as const, timeout: 60_000 };
const httpAgent = new http.Agent(agentOptions);
const httpsAgent = new https.Agent(agentOptions);

/** One POST of a notification to its receiver. Never throws: every failure is an outcome. */
export async function sendAttempt(request: AttemptRequest): Promise<AttemptOutcome> {
  const startedAt = performance.now();
  const finished = (outcome: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({ ...outcome, durationMs: Math.round(performance.now() - startedAt) });
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return finished({ delivered: false, error: 'invalid URL' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return finished({ delivered: false, error: `unsupported protocol ${url.protocol}` });
  // Node skips `lookup` for IP literals.
  const literalRefusal = refusedLiteralTargetReason(url, request.loopback);
  if (literalRefusal) return finished({ delivered: false, error: `target refused: ${literalRefusal}` });
  return new Promise((resolve) => exchange(url, request, (outcome) => resolve(finished(outcome))));
}

function exchange(url: URL, request: AttemptRequest, settle: (outcome: Omit<AttemptOutcome, 'durationMs'>) => void): void {
  let settled = false;
  let response: http.IncomingMessage | undefined;
  const chunks: Buffer[] = [];
  const done = (outcome: Omit<AttemptOutcome, 'durationMs'>) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    settle(outcome);
  };
  const answered = () => done(outcomeOf(response!, Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT)));
  const fail = (error: unknown) => done({ delivered: false, statusCode: response?.statusCode, error: describeError(error) });
  let outgoing: http.ClientRequest | undefined;
  const timer = setTimeout(() => {
    // A receiver that answered and then stalled its body has answered: its status stands.
    if (response) answered();
    else done({ delivered: false, error: `timeout after ${request.timeoutMs} ms` });
    outgoing?.destroy();
  }, request.timeoutMs);
  try {
    outgoing = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
      lookup: guardedLookup({ port: targetPort(url), loopback: request.loopback, resolve: request.resolve }),
    });
  } catch (error) {
    return fail(error); // invalid header names or values are thrown here
  }
  outgoing.on('error', fail);
  outgoing.on('response', (incoming) => {
    response = incoming;
    let kept = 0;
    incoming.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      kept += chunk.length;
      if (kept < RESPONSE_BODY_LIMIT) return;
      // Enough of the body for the log; the rest is not read (the socket is given up).
      answered();
      incoming.destroy();
    });
    incoming.on('end', answered);
    incoming.on('error', fail);
  });
  outgoing.end(request.body);
}

function outcomeOf(response: http.IncomingMessage, body: Buffer): Omit<AttemptOutcome, 'durationMs'> {
  const statusCode = response.statusCode ?? 0;
  const delivered = statusCode >= 200 && statusCode < 300;
  const error = delivered ? undefined : statusCode >= 300 && statusCode < 400 ? `redirect (${statusCode}) not followed` : `HTTP ${statusCode}`;
  const retryAfterSeconds = statusCode === 429 || statusCode === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
  return {
    delivered,
    statusCode,
    ...(error && { error }),
    ...(body.length > 0 && { responseBody: utf8Within(body, RESPONSE_BODY_LIMIT) }),
    ...(retryAfterSeconds !== undefined && { retryAfterSeconds }),
  };
}

/**
 * The bytes as text, at most `limit` bytes once encoded again: each invalid byte decodes to U+FFFD,
 * three bytes, so a binary body's text could be three times the bytes kept (and the message's item
 * has a size limit).
 */
function utf8Within(bytes: Buffer, limit: number): string {
  let text = bytes.toString('utf8');
  while (Buffer.byteLength(text) > limit) text = text.slice(0, text.length - Math.ceil((Buffer.byteLength(text) - limit) / 3));
  return text;
}

/** Retry-After is either delay-seconds or an HTTP-date (RFC 9110, 10.2.3). */
function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

const ERRNO_TEXT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'DNS lookup failed',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed while sending',
};

/** A short description of a failed exchange; built from codes only, so no header value can leak into it. */
function describeError(error: unknown): string {
  if (error instanceof TargetRefusedError) return `target refused: ${error.reason}`;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (!code) return 'request failed';
  const text = ERRNO_TEXT[code];
  if (text) return `${text} (${code})`;
  if (code === 'EPROTO') {
    // OpenSSL's reason, e.g. "wrong version number" when the receiver does not speak TLS there.
    const reason = /SSL routines:[^:]*:([^:]+)/.exec((error as Error).message)?.[1];
    return `TLS: ${reason ?? 'protocol error'} (EPROTO)`;
  }
  if (/CERT|^ERR_TLS_|^ERR_SSL_|UNABLE_TO_(GET|VERIFY)/.test(code)) return `TLS: ${code}`;
  return `request failed (${code})`;
}

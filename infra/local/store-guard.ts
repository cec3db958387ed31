import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { readBoundedBody } from './request-body';

/** dynalite's own limit on a request's body, kept here since the body is read here first. */
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

/** What the store's requests are checked against: the secret they are signed with and the file that holds it. */
export interface StoreCredential {
  secret: string;
  file: string;
}

/**
 * Puts a check in front of dynalite's request handler, in the same server. dynalite answers any
 * request, with `Access-Control-Allow-Origin: *` to browsers: a web page, or another user of the
 * machine, could read every account's secret and insert a working API key.
 * - A request that carries an `Origin` header comes from a browser: refused, preflights included.
 * - With a credential, a request must be signed with it (AWS Signature V4, as the SDK signs with its
 *   secret access key): its signature is checked over the body, which is then handed to dynalite.
 *   One without a signature of that form is refused before any of its body is read, and a body is
 *   read no further than its bound. The secret itself never travels; the access key id is not checked (`aws` CLI users may pick any).
 */
export function guardStore(server: Server, credential: StoreCredential | undefined): void {
  const serve = server.listeners('request')[0] as RequestListener;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers.origin !== undefined) return refuse(response, 403, 'this store does not serve browsers (the request has an Origin header)');
    if (!credential) return serve(request, response);
    const unsigned = `this store serves only requests signed with the credential in ${credential.file}`;
    // Before any of the body is read: only a request signed the way the SDK signs may make the store read one.
    const signature = signatureOf(request);
    if (!signature) return refuse(response, 403, unsigned);
    readBoundedBody(request, MAX_REQUEST_BYTES, 'stop')
      .then((body) => {
        if (body === undefined) return refuse(response, 413, `a request body is at most ${MAX_REQUEST_BYTES} bytes`);
        if (!signedWith(credential.secret, signature, request, body)) return refuse(response, 403, unsigned);
        // dynalite reads the body from the request's stream: it gets a stream of the body already read.
        const replayed = Object.assign(Readable.from(body.length > 0 ? [body] : []), { headers: request.headers, method: request.method, url: request.url });
        serve(replayed as unknown as IncomingMessage, response);
      })
      // Whatever a request holds, it costs that request alone: an error here must never reach the process (the store's exit stops npm start).
      .catch(() => response.destroy());
  });
}

/**
 * In DynamoDB's error shape, so that the SDK reports the message; a 403 the SDK does not retry. The
 * connection is closed: what is left of a refused request's body is never read.
 */
function refuse(response: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ __type: 'com.amazon.coral.service#AccessDeniedException', message });
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(body), connection: 'close' });
  response.end(body);
}

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=[^/\s]+\/(\d{8})\/([^/\s]+)\/([^/\s]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** What a request's AWS Signature V4 headers say, when they have its form. */
interface Signature {
  date: string;
  day: string;
  region: string;
  service: string;
  signedHeaders: string;
  signature: string;
}

/** The request's signature, when it is a request to `/` (the only path the SDK posts to) signed as the SDK signs. */
function signatureOf(request: IncomingMessage): Signature | undefined {
  const match = AUTHORIZATION.exec(request.headers.authorization ?? '');
  const date = request.headers['x-amz-date'];
  if (!match || request.url !== '/' || typeof date !== 'string') return undefined;
  const [, day, region, service, signedHeaders, signature] = match as unknown as [string, string, string, string, string, string];
  return date.startsWith(day) ? { date, day, region, service, signedHeaders, signature } : undefined;
}

/**
 * Whether the signature is the one computed as the SDK does (@smithy/signature-v4) over this request
 * and body. No expiry is checked: the signature keeps the secret off the wire, and the store listens
 * on loopback only, where others cannot capture a request to replay it.
 */
function signedWith(secret: string, { date, day, region, service, signedHeaders, signature }: Signature, request: IncomingMessage, body: Buffer): boolean {
  const payloadHash = sha256(body);
  // The signer takes this header, when present, for the body's hash: it must be the body's.
  const declaredHash = request.headers['x-amz-content-sha256'];
  if (declaredHash !== undefined && declaredHash !== payloadHash) return false;
  const names = signedHeaders.split(';');
  const headers = names.map((name) => `${name}:${headerValue(request, name)}\n`).join('');
  const canonicalRequest = `${request.method}\n/\n\n${headers}\n${signedHeaders}\n${payloadHash}`;
  const scope = `${day}/${region}/${service}/aws4_request`;
  const expected = hmac(signingKey(secret, day, region, service), `AWS4-HMAC-SHA256\n${date}\n${scope}\n${sha256(canonicalRequest)}`);
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/** The header's value as the signer saw it; a name that is not a header of the request (`constructor`, say) has none. */
function headerValue(request: IncomingMessage, name: string): string {
  const value: unknown = Object.hasOwn(request.headers, name) ? request.headers[name] : undefined;
  const text = Array.isArray(value) ? value.join(',') : typeof value === 'string' ? value : '';
  return text.trim().replace(/\s+/g, ' ');
}

let cachedKey: { scope: string; key: Buffer } | undefined;

/** Derived once a day per region and service, as on AWS. */
function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  const scope = `${secret}\n${day}/${region}/${service}`;
  if (cachedKey?.scope !== scope) {
    const key = [day, region, service, 'aws4_request'].reduce<Buffer>((previous, part) => hmac(previous, part), Buffer.from(`AWS4${secret}`));
    cachedKey = { scope, key };
  }
  return cachedKey.key;
}

const hmac = (key: Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { readBoundedBody } from './request-body';

/**
 * What the local stand-ins for AWS services (the store, the delivery queue's endpoint) check requests
 * against: the secret the SDK signs them with (DATA_DIR's store credential) and the file that holds it.
 */
export interface StoreCredential {
  secret: string;
  file: string;
}

/** Why a request is not served: 403, or 413 for a body over the bound. */
export interface Refusal {
  status: 403 | 413;
  message: string;
}

/**
 * What `npm start`'s stand-ins for AWS (the store, the delivery queue's endpoint: `serves` names it)
 * check before serving a request. A request that carries an `Origin` header comes from a browser:
 * refused, preflights included. With a credential, a request must be signed with it (AWS Signature
 * V4, as the SDK signs with its secret access key): one without a signature of that form is refused
 * before any of its body is read, and the signature is checked over the body, read no further than
 * `maxBytes`. The secret itself never travels; the access key id is not checked (`aws` CLI users may
 * pick any). Resolves with the body, or none when there is no credential and `readBody` is false.
 */
export async function checkedRequest(
  request: IncomingMessage,
  { credential, serves, maxBytes, readBody }: { credential?: StoreCredential; serves: string; maxBytes: number; readBody: boolean },
): Promise<{ refusal: Refusal } | { body?: Buffer }> {
  if (request.headers.origin !== undefined) return { refusal: { status: 403, message: `this ${serves} does not serve browsers (the request has an Origin header)` } };
  if (!credential && !readBody) return {};
  const unsigned: Refusal = { status: 403, message: `this ${serves} serves only requests signed with the credential in ${credential?.file}` };
  const signature = credential && signatureOf(request);
  if (credential && !signature) return { refusal: unsigned };
  const body = await readBoundedBody(request, maxBytes, 'stop');
  if (body === undefined) return { refusal: { status: 413, message: `a request body is at most ${maxBytes} bytes` } };
  if (credential && !signedWith(credential.secret, signature!, request, body)) return { refusal: unsigned };
  return { body };
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

/**
 * The request's signature, when it is a request to `/` signed as the SDK signs. `/` is the only path
 * the SDK posts to for these JSON protocols: DynamoDB's, and SQS's, whose client posts to the origin
 * of its endpoint (or of the QueueUrl), whatever the queue's path.
 */
function signatureOf(request: IncomingMessage): Signature | undefined {
  const match = AUTHORIZATION.exec(request.headers.authorization ?? '');
  const date = request.headers['x-amz-date'];
  if (!match || request.url !== '/' || typeof date !== 'string') return undefined;
  const [, day, region, service, signedHeaders, signature] = match as unknown as [string, string, string, string, string, string];
  return date.startsWith(day) ? { date, day, region, service, signedHeaders, signature } : undefined;
}

/**
 * Whether the signature is the one computed as the SDK does (@smithy/signature-v4) over this request
 * and body. No expiry is checked: the signature keeps the secret off the wire, and the servers listen
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

/**
 * How a notification is signed (the spec's delivery.md, "Signing"), and how a receiver checks it.
 * Two signatures over the same key: the hosted API's `x-signature` and the Standard Webhooks headers,
 * so that receivers written for either verify ours unchanged.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';
import { Webhook } from 'standardwebhooks';

/** What a notification is signed with: the current secret and, during the grace period after a rotation, the previous one. */
export interface SigningSecrets {
  /** 64 hex characters. */
  current: string;
  /** Included only during the rotation grace period; the caller decides. */
  previous?: string;
}

export type SignatureHeaders = Record<'x-signature' | 'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>;

export interface Verification {
  xSignature: boolean;
  standardWebhooks: boolean;
  /** Why a check failed, prefixed by the header it concerns; absent when both hold. */
  error?: string;
}

const SHARED_SECRET = /^[0-9a-f]{64}$/i;

/**
 * The HMAC key: the hex-decoded shared secret. Throws on anything but 64 hex characters, because
 * `Buffer.from(hex, 'hex')` would silently sign with a truncated key.
 */
export function signingKey(hexSecret: string): Buffer {
  if (!SHARED_SECRET.test(hexSecret)) throw new Error('a shared secret is 64 hex characters');
  return Buffer.from(hexSecret, 'hex');
}

/** The body as sent and signed: canonical JSON (RFC 8785, as the hosted API's Node receivers compute it). */
export function canonicalBody(message: unknown): string {
  return canonicalJson(message);
}

/** Canonical JSON (RFC 8785) of any value: a body's, or an event's within its envelope. */
export function canonicalJson(value: unknown): string {
  return canonicalize(value);
}

/** What a notification's envelope holds besides its event. */
export interface EnvelopeIds {
  webhookId: string;
  eventType: string;
  messageId: string;
}

/**
 * The canonical body of the envelope {webhookId, eventType, messageId, event} around its event's
 * canonical text: `before + canonicalJson(event) + after` is `canonicalBody` of the envelope,
 * because RFC 8785 sorts the keys and `event` comes first. An event shared by many webhooks is
 * serialised once.
 */
export function envelopeAround({ webhookId, eventType, messageId }: EnvelopeIds): { before: string; after: string } {
  return {
    before: '{"event":',
    after: `,"eventType":${canonicalize(eventType)},"messageId":${canonicalize(messageId)},"webhookId":${canonicalize(webhookId)}}`,
  };
}

/** The headers that sign one attempt of a notification; `body` is sent exactly as given (already canonical). */
export function signatureHeaders(input: { body: string; messageId: string; timestamp: number; secrets: SigningSecrets }): SignatureHeaders {
  const { body, messageId, timestamp, secrets } = input;
  const keys = [secrets.current, ...(secrets.previous === undefined ? [] : [secrets.previous])].map(signingKey);
  return {
    'x-signature': createHmac('sha256', keys[0]!).update(body).digest('base64'),
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    // The Standard Webhooks scheme; node's HMAC, not the library's (pure JavaScript SHA-256, 4 times
    // the cost). Its verifiers accept ours: test/lib/deliveries/signing.test.ts.
    'webhook-signature': keys.map((key) => `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`).join(' '),
  };
}

/** The shared secret in the Standard Webhooks libraries' form: 'whsec_' + base64 of the key bytes. */
export function standardWebhooksSecret(hexSecret: string): string {
  return `whsec_${signingKey(hexSecret).toString('base64')}`;
}

/**
 * The receiver's side: `x-signature` over the re-canonicalized parsed body (as the hosted API's
 * receivers check it), and the Standard Webhooks headers with that library (default tolerance of
 * 5 minutes on `webhook-timestamp`). Never throws: a failure is a result with its reason.
 */
export function verifyNotification(input: { rawBody: string; headers: Record<string, string | undefined>; secret: string }): Verification {
  const headers = Object.fromEntries(Object.entries(input.headers).map(([name, value]) => [name.toLowerCase(), value ?? '']));
  let key: Buffer;
  try {
    key = signingKey(input.secret);
  } catch (error) {
    return { xSignature: false, standardWebhooks: false, error: `secret: ${(error as Error).message}` };
  }
  const errors = [checkXSignature(input.rawBody, headers['x-signature'] ?? '', key), checkStandardWebhooks(input.rawBody, headers, key)];
  const [xSignature, standardWebhooks] = errors.map((error) => error === undefined) as [boolean, boolean];
  const error = errors.filter((reason) => reason !== undefined).join('; ');
  return error ? { xSignature, standardWebhooks, error } : { xSignature, standardWebhooks };
}

/** Undefined when `x-signature` holds, else why not. */
function checkXSignature(rawBody: string, given: string, key: Buffer): string | undefined {
  if (!given) return 'x-signature: missing';
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody);
  } catch {
    return 'x-signature: the body is not JSON';
  }
  const expected = createHmac('sha256', key).update(canonicalize(parsed)).digest();
  const actual = Buffer.from(given, 'base64');
  return actual.length === expected.length && timingSafeEqual(actual, expected) ? undefined : 'x-signature: does not match the body';
}

/** Undefined when `webhook-signature` holds for `webhook-id` and `webhook-timestamp`, else why not. */
function checkStandardWebhooks(rawBody: string, headers: Record<string, string>, key: Buffer): string | undefined {
  try {
    new Webhook(key, { format: 'raw' }).verify(
      rawBody,
      {
        'webhook-id': headers['webhook-id'] ?? '',
        'webhook-timestamp': headers['webhook-timestamp'] ?? '',
        'webhook-signature': headers['webhook-signature'] ?? '',
      },
      { jsonParse: false },
    );
    return undefined;
  } catch (error) {
    return `webhook-signature: ${(error as Error).message}`;
  }
}

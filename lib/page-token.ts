import { createHmac, timingSafeEqual } from 'node:crypto';
import { BadRequest } from './errors';
import { uuidFromHex, uuidHex } from './uuid';

/**
 * Page tokens: where the last page ended, signed with a server key over the list it belongs to. A
 * token altered, forged, taken to another account or list, or reused with another filter fails the
 * signature check. Layout (base64url): version (1 byte) | position | HMAC-SHA256 truncated to 16 bytes.
 *
 * - Webhook lists: the position is the last webhook's id (16 bytes), signed over the account and the
 *   status filter.
 * - A webhook's addresses: the position is the last address (20 bytes), signed over the account and
 *   the webhook's id.
 * - A webhook's deliveries: the position is the last message's id (16 bytes), signed over the
 *   account, the webhook's id and the status filter.
 * - A webhook's backfills: the position is the last backfill's id (16 bytes), signed over the
 *   account and the webhook's id.
 */
const VERSION = 1;
const ID_BYTES = 16;
const ADDRESS_BYTES = 20;
const MAC_BYTES = 16;

export interface PageTokenScope {
  account: string;
  status?: string;
}

export const INVALID_PAGE_TOKEN = 'Invalid pageToken: pass the nextPageToken of an earlier call with the same status filter';
export const INVALID_DELIVERY_PAGE_TOKEN =
  "Invalid pageToken: pass the nextPageToken of an earlier call for this webhook's deliveries with the same status filter";
export const INVALID_BACKFILL_PAGE_TOKEN = "Invalid pageToken: pass the nextPageToken of an earlier call for this webhook's backfills";
export const INVALID_ADDRESS_PAGE_TOKEN = "Invalid pageToken: pass the nextPageToken of an earlier call for this webhook's addresses";

/** What a token is signed over: the list, then its scope, each field length-prefixed. */
type SignedScope = [list: Buffer, ...fields: string[]];

export function encodePageToken(key: Buffer, scope: PageTokenScope, lastId: string): string {
  return encode(key, webhooksScope(scope), uuidBytes(lastId));
}

/** The last id of the earlier page; a 400 for any token this server did not issue for this scope. */
export function decodePageToken(key: Buffer, scope: PageTokenScope, token: string): string {
  return uuidFromHex(decode(key, webhooksScope(scope), token, ID_BYTES, INVALID_PAGE_TOKEN).toString('hex'));
}

export function encodeAddressPageToken(key: Buffer, account: string, webhookId: string, lastAddress: string): string {
  return encode(key, [ADDRESSES, account, webhookId], Buffer.from(lastAddress.slice(2), 'hex'));
}

/** The last address of the earlier page; a 400 for any token this server did not issue for this webhook. */
export function decodeAddressPageToken(key: Buffer, account: string, webhookId: string, token: string): string {
  return `0x${decode(key, [ADDRESSES, account, webhookId], token, ADDRESS_BYTES, INVALID_ADDRESS_PAGE_TOKEN).toString('hex')}`;
}

export function encodeDeliveryPageToken(key: Buffer, account: string, webhookId: string, status: string | undefined, lastMessageId: string): string {
  return encode(key, [DELIVERIES, account, webhookId, status ?? ''], uuidBytes(lastMessageId));
}

/** The last message id of the earlier page; a 400 for any token this server did not issue for this list. */
export function decodeDeliveryPageToken(key: Buffer, account: string, webhookId: string, status: string | undefined, token: string): string {
  return uuidFromHex(decode(key, [DELIVERIES, account, webhookId, status ?? ''], token, ID_BYTES, INVALID_DELIVERY_PAGE_TOKEN).toString('hex'));
}

export function encodeBackfillPageToken(key: Buffer, account: string, webhookId: string, lastBackfillId: string): string {
  return encode(key, [BACKFILLS, account, webhookId], uuidBytes(lastBackfillId));
}

/** The last backfill id of the earlier page; a 400 for any token this server did not issue for this webhook. */
export function decodeBackfillPageToken(key: Buffer, account: string, webhookId: string, token: string): string {
  return uuidFromHex(decode(key, [BACKFILLS, account, webhookId], token, ID_BYTES, INVALID_BACKFILL_PAGE_TOKEN).toString('hex'));
}

function uuidBytes(id: string): Buffer {
  const bytes = Buffer.from(uuidHex(id), 'hex');
  if (bytes.length !== ID_BYTES) throw new Error('Page token ids must be UUIDs');
  return bytes;
}

function encode(key: Buffer, scope: SignedScope, position: Buffer): string {
  const head = Buffer.concat([Buffer.of(VERSION), position]);
  return Buffer.concat([head, mac(key, scope, head)]).toString('base64url');
}

function decode(key: Buffer, scope: SignedScope, token: string, positionBytes: number, invalid: string): Buffer {
  const bytes = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url') : Buffer.alloc(0);
  if (bytes.length !== 1 + positionBytes + MAC_BYTES || bytes[0] !== VERSION || bytes.toString('base64url') !== token) {
    throw new BadRequest(invalid);
  }
  const head = bytes.subarray(0, 1 + positionBytes);
  if (!timingSafeEqual(bytes.subarray(1 + positionBytes), mac(key, scope, head))) throw new BadRequest(invalid);
  return head.subarray(1);
}

/** Each field length-prefixed, so that no two scopes serialise to the same bytes. */
function lengthPrefixed(field: string): Buffer {
  const length = Buffer.byteLength(field, 'utf8');
  const prefixed = Buffer.allocUnsafe(4 + length);
  prefixed.writeUInt32BE(length);
  prefixed.write(field, 4, 'utf8');
  return prefixed;
}

const WEBHOOKS = lengthPrefixed('webhooks');
const ADDRESSES = lengthPrefixed('addresses');
const DELIVERIES = lengthPrefixed('deliveries');
const BACKFILLS = lengthPrefixed('backfills');

const webhooksScope = (scope: PageTokenScope): SignedScope => [WEBHOOKS, scope.account, scope.status ?? ''];

function mac(key: Buffer, [list, ...fields]: SignedScope, head: Buffer): Buffer {
  const hmac = createHmac('sha256', key).update(list);
  for (const field of fields) hmac.update(lengthPrefixed(field));
  return hmac.update(head).digest().subarray(0, MAC_BYTES);
}

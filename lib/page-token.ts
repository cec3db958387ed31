import { createHmac, timingSafeEqual } from 'node:crypto';
import { BadRequest } from './errors';

/**
 * Page tokens: the id of the last webhook a page returned, signed with a server key over the
 * account and the status filter the page was listed with. A token altered, forged, taken to another
 * account or reused with another filter fails the signature check. Layout (base64url):
 * version (1 byte) | last id as UUID bytes (16) | HMAC-SHA256 truncated to 16 bytes.
 */
const VERSION = 1;
const ID_BYTES = 16;
const MAC_BYTES = 16;
const TOKEN_BYTES = 1 + ID_BYTES + MAC_BYTES;

export interface PageTokenScope {
  account: string;
  status?: string;
}

export const INVALID_PAGE_TOKEN = 'Invalid pageToken: pass the nextPageToken of an earlier call with the same status filter';

export function encodePageToken(key: Buffer, scope: PageTokenScope, lastId: string): string {
  const id = Buffer.from(lastId.replaceAll('-', ''), 'hex');
  if (id.length !== ID_BYTES) throw new Error('Page token ids must be UUIDs');
  const head = Buffer.concat([Buffer.of(VERSION), id]);
  return Buffer.concat([head, mac(key, scope, head)]).toString('base64url');
}

/** The last id of the earlier page; a 400 for any token this server did not issue for this scope. */
export function decodePageToken(key: Buffer, scope: PageTokenScope, token: string): string {
  const bytes = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url') : Buffer.alloc(0);
  if (bytes.length !== TOKEN_BYTES || bytes[0] !== VERSION || bytes.toString('base64url') !== token) {
    throw new BadRequest(INVALID_PAGE_TOKEN);
  }
  const head = bytes.subarray(0, 1 + ID_BYTES);
  if (!timingSafeEqual(bytes.subarray(1 + ID_BYTES), mac(key, scope, head))) throw new BadRequest(INVALID_PAGE_TOKEN);
  const hex = head.subarray(1).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Each field length-prefixed, so that no two scopes serialise to the same bytes. */
function lengthPrefixed(field: string): Buffer {
  const length = Buffer.byteLength(field, 'utf8');
  const prefixed = Buffer.allocUnsafe(4 + length);
  prefixed.writeUInt32BE(length);
  prefixed.write(field, 4, 'utf8');
  return prefixed;
}

const PURPOSE = lengthPrefixed('webhooks');

function mac(key: Buffer, scope: PageTokenScope, head: Buffer): Buffer {
  return createHmac('sha256', key)
    .update(PURPOSE)
    .update(lengthPrefixed(scope.account))
    .update(lengthPrefixed(scope.status ?? ''))
    .update(head)
    .digest()
    .subarray(0, MAC_BYTES);
}

import { createHmac, timingSafeEqual } from 'node:crypto';
import { BadRequest } from './errors';
import { API_KEY_ID_PATTERN } from './keys/api-keys';
import { uuidFromHex, uuidHex } from './uuid';

/**
 * Page tokens: where the last page ended, signed with a server key over the list it belongs to. A
 * token altered, forged, taken to another account or list, or reused with another filter fails the
 * signature check. Layout (base64url): version (1 byte) | position | HMAC-SHA256 truncated to 16 bytes.
 * One codec serves every list; a list says what its position is and which fields of its scope the
 * token is signed over (pageTokens below).
 */
const VERSION = 1;
const MAC_BYTES = 16;

/** Where a list is: the account's webhooks (with a status filter), or one webhook's addresses, deliveries or backfills. */
export interface PageTokenScope {
  account: string;
  webhookId?: string;
  /** The list's status filter. */
  status?: string;
}

export interface PageTokenCodec {
  encode(key: Buffer, scope: PageTokenScope, position: string): string;
  /** The position of the earlier page's end; a 400 (the list's message) for any token this server did not issue for this scope. */
  decode(key: Buffer, scope: PageTokenScope, token: string): string;
}

/** How a page's end is written into its token: as raw bytes, a fixed number of them. */
interface Position {
  bytes: number;
  toBytes(position: string): Buffer;
  fromBytes(bytes: Buffer): string;
}

const UUID_POSITION: Position = {
  bytes: 16,
  toBytes(id) {
    const bytes = Buffer.from(uuidHex(id), 'hex');
    if (bytes.length !== 16) throw new Error('Page token ids must be UUIDs');
    return bytes;
  },
  fromBytes: (bytes) => uuidFromHex(bytes.toString('hex')),
};

const ADDRESS_POSITION: Position = {
  bytes: 20,
  toBytes: (address) => Buffer.from(address.slice(2), 'hex'),
  fromBytes: (bytes) => `0x${bytes.toString('hex')}`,
};

/** An API key's creation time (ISO, to the millisecond) and id, as `<createdAt> <keyId>`: what orders the account's keys. */
const API_KEY_POSITION: Position = {
  bytes: 12,
  toBytes(position) {
    const [createdAt = '', keyId = ''] = position.split(' ');
    const time = Date.parse(createdAt);
    if (!Number.isSafeInteger(time) || time < 0 || !API_KEY_ID_PATTERN.test(keyId)) throw new Error('API key page positions are <createdAt> <keyId>');
    const bytes = Buffer.alloc(12);
    bytes.writeUIntBE(time, 0, 6);
    bytes.write(keyId, 6, 'hex');
    return bytes;
  },
  fromBytes: (bytes) => `${new Date(bytes.readUIntBE(0, 6)).toISOString()} ${bytes.subarray(6).toString('hex')}`,
};

interface PageList {
  name: string;
  position: Position;
  /** The scope's fields the token is signed over, in this order; an absent one signs as ''. */
  signedOver: (keyof PageTokenScope)[];
  /** The 400's message for a token that fails. */
  invalid: string;
}

export const INVALID_PAGE_TOKEN = 'Invalid pageToken: pass the nextPageToken of an earlier call with the same status filter';
export const INVALID_DELIVERY_PAGE_TOKEN =
  "Invalid pageToken: pass the nextPageToken of an earlier call for this webhook's deliveries with the same status filter";
export const INVALID_BACKFILL_PAGE_TOKEN = "Invalid pageToken: pass the nextPageToken of an earlier call for this webhook's backfills";
export const INVALID_API_KEY_PAGE_TOKEN = "Invalid pageToken: pass the nextPageToken of an earlier call for this account's API keys";
export const INVALID_ADDRESS_PAGE_TOKEN = "Invalid pageToken: pass the nextPageToken of an earlier call for this webhook's addresses";

function pageTokenCodec({ name, position, signedOver, invalid }: PageList): PageTokenCodec {
  const list = lengthPrefixed(name);
  const mac = (key: Buffer, scope: PageTokenScope, head: Buffer) => {
    const hmac = createHmac('sha256', key).update(list);
    for (const field of signedOver) hmac.update(lengthPrefixed(scope[field] ?? ''));
    return hmac.update(head).digest().subarray(0, MAC_BYTES);
  };
  return {
    encode(key, scope, at) {
      const head = Buffer.concat([Buffer.of(VERSION), position.toBytes(at)]);
      return Buffer.concat([head, mac(key, scope, head)]).toString('base64url');
    },
    decode(key, scope, token) {
      const bytes = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url') : Buffer.alloc(0);
      if (bytes.length !== 1 + position.bytes + MAC_BYTES || bytes[0] !== VERSION || bytes.toString('base64url') !== token) {
        throw new BadRequest(invalid);
      }
      const head = bytes.subarray(0, 1 + position.bytes);
      if (!timingSafeEqual(bytes.subarray(1 + position.bytes), mac(key, scope, head))) throw new BadRequest(invalid);
      return position.fromBytes(head.subarray(1));
    },
  };
}

/** Each field length-prefixed, so that no two scopes serialise to the same bytes. */
function lengthPrefixed(field: string): Buffer {
  const length = Buffer.byteLength(field, 'utf8');
  const prefixed = Buffer.allocUnsafe(4 + length);
  prefixed.writeUInt32BE(length);
  prefixed.write(field, 4, 'utf8');
  return prefixed;
}

/** Every list's tokens. The position is the last item of the page: a webhook's, message's or backfill's id, an address, or an API key's time and id. */
export const pageTokens = {
  webhooks: pageTokenCodec({ name: 'webhooks', position: UUID_POSITION, signedOver: ['account', 'status'], invalid: INVALID_PAGE_TOKEN }),
  addresses: pageTokenCodec({ name: 'addresses', position: ADDRESS_POSITION, signedOver: ['account', 'webhookId'], invalid: INVALID_ADDRESS_PAGE_TOKEN }),
  deliveries: pageTokenCodec({
    name: 'deliveries',
    position: UUID_POSITION,
    signedOver: ['account', 'webhookId', 'status'],
    invalid: INVALID_DELIVERY_PAGE_TOKEN,
  }),
  backfills: pageTokenCodec({ name: 'backfills', position: UUID_POSITION, signedOver: ['account', 'webhookId'], invalid: INVALID_BACKFILL_PAGE_TOKEN }),
  apiKeys: pageTokenCodec({ name: 'apiKeys', position: API_KEY_POSITION, signedOver: ['account'], invalid: INVALID_API_KEY_PAGE_TOKEN }),
} satisfies Record<string, PageTokenCodec>;

import { createHash } from 'node:crypto';

/** UUIDs as 32 hexadecimal digits (16 bytes) and back: the compact form keys and tokens carry. */
export const uuidHex = (id: string) => id.replaceAll('-', '');

export const uuidFromHex = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;

/** Milliseconds since the epoch held in a UUIDv7's first 48 bits. */
export const uuidv7Time = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

/**
 * A UUIDv8 that sorts and reads like a UUIDv7 (milliseconds in its first 48 bits, see `uuidv7Time`)
 * and whose other 74 bits come from hashing `parts`: the same parts always give the same id.
 */
export function deterministicUuid(timeMs: number, parts: string[]): string {
  const hash = createHash('sha256').update(parts.join('\n')).digest();
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(Math.max(0, Math.floor(timeMs)), 0, 6);
  hash.copy(bytes, 6, 0, 10);
  bytes[6] = 0x80 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  return uuidFromHex(bytes.toString('hex'));
}

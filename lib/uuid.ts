/** UUIDs as 32 hexadecimal digits (16 bytes) and back: the compact form keys and tokens carry. */
export const uuidHex = (id: string) => id.replaceAll('-', '');

export const uuidFromHex = (hex: string) => `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;

/** Milliseconds since the epoch held in a UUIDv7's first 48 bits. */
export const uuidv7Time = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

let cached: Buffer | undefined;

export const MIN_PAGE_TOKEN_KEY_BYTES = 32;

/**
 * The server key that signs page tokens, from `PAGE_TOKEN_KEY` (hex). `npm start` generates one
 * and keeps it in its data directory, so tokens survive a restart.
 */
export async function pageTokenKey(): Promise<Buffer> {
  cached ??= parsePageTokenKey(process.env.PAGE_TOKEN_KEY);
  return cached;
}

function parsePageTokenKey(hex: string | undefined): Buffer {
  const key = hex && /^([0-9a-fA-F]{2})+$/.test(hex) ? Buffer.from(hex, 'hex') : Buffer.alloc(0);
  if (key.length < MIN_PAGE_TOKEN_KEY_BYTES) {
    throw new Error(`PAGE_TOKEN_KEY must be at least ${MIN_PAGE_TOKEN_KEY_BYTES} bytes, hex-encoded`);
  }
  return key;
}

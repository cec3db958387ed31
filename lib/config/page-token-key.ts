import { runtimeConfig } from './runtime';

export const MIN_PAGE_TOKEN_KEY_BYTES = 32;

let cached: Promise<Buffer> | undefined;

/**
 * The server key that signs page tokens: on AWS from the Secrets Manager secret the stack generates,
 * read once per cold start; locally the key `npm start` generates and keeps in its data directory,
 * so that tokens survive a restart.
 */
export function pageTokenKey(): Promise<Buffer> {
  cached ??= readPageTokenKey().catch((error: unknown) => {
    cached = undefined; // a failed read (Secrets Manager unreachable) is retried by the next request
    throw error;
  });
  return cached;
}

async function readPageTokenKey(): Promise<Buffer> {
  const source = runtimeConfig().pageTokenKey;
  if (!('secretArn' in source)) return parsePageTokenKey(source.hex, 'PAGE_TOKEN_KEY');
  // Loaded only here, on AWS: locally the client would be dead weight at every cold start.
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const { SecretString } = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: source.secretArn }));
  return parsePageTokenKey(SecretString, 'the page-token secret');
}

export function parsePageTokenKey(hex: string | undefined, source: string): Buffer {
  const key = hex && /^([0-9a-fA-F]{2})+$/.test(hex.trim()) ? Buffer.from(hex.trim(), 'hex') : Buffer.alloc(0);
  if (key.length < MIN_PAGE_TOKEN_KEY_BYTES) {
    throw new Error(`${source} must hold at least ${MIN_PAGE_TOKEN_KEY_BYTES} bytes, hex-encoded`);
  }
  return key;
}

import { randomBytes } from 'node:crypto';
import { NotFound } from '../errors';
import type { SigningSecrets } from '../deliveries/signing';
import { callerAsItIsNow } from '../keys/account-api-keys';
import type { RotateSharedSecretQuery, SharedSecret } from '../schemas/shared-secret';
import { currentSecretOrPut, getCurrentSecret, rotateSharedSecret } from '../store/shared-secrets';

const SECRET_BYTES = 32;

const newSecret = () => randomBytes(SECRET_BYTES).toString('hex');

/**
 * The API's rotation: the calling key (`callerKeyId`, the key the authorizer accepted) is read as it is
 * now first, as the key operations read theirs: one revoked since the authorizer's cache accepted it (or
 * made by one) rotates nothing (401).
 */
export async function generateOrRotateSharedSecretWithKey(account: string, callerKeyId: string | undefined, query: RotateSharedSecretQuery): Promise<SharedSecret> {
  await callerAsItIsNow(account, callerKeyId);
  return generateOrRotateSharedSecret(account, query);
}

/**
 * A new secret replaces the current one, which is kept as the previous one with the time it was
 * replaced (delivery signs with both during a grace period), or, with `endGracePeriod`, dropped along
 * with any previous one: from then on only the new secret signs.
 */
export async function generateOrRotateSharedSecret(
  account: string,
  { endGracePeriod }: RotateSharedSecretQuery = { endGracePeriod: false },
): Promise<SharedSecret> {
  const secret = newSecret();
  await rotateSharedSecret(account, secret, endGracePeriod);
  return { secret };
}

export async function getSharedSecret(account: string): Promise<SharedSecret> {
  const secret = await getCurrentSecret(account);
  if (secret === undefined) {
    throw new NotFound('No shared secret has been generated yet: call POST /v1/webhooks:generateOrRotateSharedSecret');
  }
  return { secret };
}

/**
 * The account's secret, generated if it has none yet: an account's first notification is signed like
 * every other. Concurrent first notifications agree on one secret.
 */
export async function sharedSecretGeneratedIfMissing(account: string): Promise<SigningSecrets> {
  return { current: await currentSecretOrPut(account, newSecret()) };
}

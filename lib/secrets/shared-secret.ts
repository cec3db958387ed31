import { randomBytes } from 'node:crypto';
import { NotFound } from '../errors';
import type { SigningSecrets } from '../deliveries/signing';
import type { RotateSharedSecretQuery, SharedSecret } from '../schemas/shared-secret';
import { tableName } from '../store/client';
import { getItem, updateItem, type Item } from '../store/items';
import { sharedSecretKey } from '../store/table';

const SECRET_BYTES = 32;

/**
 * A new secret replaces the current one, which is kept as `previousSecret` with the time it was
 * replaced (delivery signs with both during a grace period), or, with `endGracePeriod`, dropped along
 * with any previous one: from then on only the new secret signs. One UpdateItem does it: DynamoDB
 * evaluates every operand against the item as it was before the update, so concurrent rotations
 * serialise and current/previous are never torn.
 */
export async function generateOrRotateSharedSecret(
  account: string,
  { endGracePeriod }: RotateSharedSecretQuery = { endGracePeriod: false },
): Promise<SharedSecret> {
  const secret = randomBytes(SECRET_BYTES).toString('hex');
  const previous = endGracePeriod ? ':none' : 'if_not_exists(currentSecret, :none)';
  await updateItem({
    TableName: tableName(),
    Key: sharedSecretKey(account),
    UpdateExpression: `SET previousSecret = ${previous}, previousReplacedAt = :now, currentSecret = :secret, currentCreatedAt = :now`,
    ExpressionAttributeValues: { ':none': null, ':secret': secret, ':now': Math.floor(Date.now() / 1000) },
  });
  return { secret };
}

export async function getSharedSecret(account: string): Promise<SharedSecret> {
  const item = await getItem({ TableName: tableName(), Key: sharedSecretKey(account), ConsistentRead: true });
  if (typeof item?.currentSecret !== 'string') {
    throw new NotFound('No shared secret has been generated yet: call POST /v1/webhooks:generateOrRotateSharedSecret');
  }
  return { secret: item.currentSecret };
}

/** The signing secrets held in the account's secret item (as read by the delivery consumer), if it has a secret. */
export function signingSecretsOf(item: Item | undefined, graceSeconds: number, now = Date.now()): SigningSecrets | undefined {
  if (typeof item?.currentSecret !== 'string') return undefined;
  const inGrace = typeof item.previousSecret === 'string' && now / 1000 - Number(item.previousReplacedAt) < graceSeconds;
  return inGrace ? { current: item.currentSecret, previous: item.previousSecret } : { current: item.currentSecret };
}

/**
 * The account's secret, generated if it has none yet: an account's first notification is signed like
 * every other. Concurrent first notifications agree on one secret (`if_not_exists`).
 */
export async function sharedSecretGeneratedIfMissing(account: string): Promise<SigningSecrets> {
  const item = await updateItem({
    TableName: tableName(),
    Key: sharedSecretKey(account),
    UpdateExpression: 'SET currentSecret = if_not_exists(currentSecret, :secret), currentCreatedAt = if_not_exists(currentCreatedAt, :now)',
    ExpressionAttributeValues: { ':secret': randomBytes(SECRET_BYTES).toString('hex'), ':now': Math.floor(Date.now() / 1000) },
    ReturnValues: 'ALL_NEW',
  });
  return { current: item!.currentSecret as string };
}

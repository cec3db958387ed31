/** The account's shared secret item: the secret notifications are signed with, and the one it replaced. */
import type { SigningSecrets } from '../deliveries/signing';
import { tableName } from './client';
import { getItem, updateItem, type Item } from './items';
import { sharedSecretKey } from './table';

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * `secret` replaces the current one, which is kept as `previousSecret` with the time it was
 * replaced, or, with `endGracePeriod`, dropped along with any previous one. One UpdateItem does it:
 * DynamoDB evaluates every operand against the item as it was before the update, so concurrent
 * rotations serialise and current/previous are never torn.
 */
export async function rotateSharedSecret(account: string, secret: string, endGracePeriod: boolean): Promise<void> {
  const previous = endGracePeriod ? ':none' : 'if_not_exists(currentSecret, :none)';
  await updateItem({
    TableName: tableName(),
    Key: sharedSecretKey(account),
    UpdateExpression: `SET previousSecret = ${previous}, previousReplacedAt = :now, currentSecret = :secret, currentCreatedAt = :now`,
    ExpressionAttributeValues: { ':none': null, ':secret': secret, ':now': nowSeconds() },
  });
}

/** The account's current secret, read consistently; undefined when none was ever generated. */
export async function getCurrentSecret(account: string): Promise<string | undefined> {
  const item = await getItem({ TableName: tableName(), Key: sharedSecretKey(account), ConsistentRead: true });
  return typeof item?.currentSecret === 'string' ? item.currentSecret : undefined;
}

/** The signing secrets held in the account's secret item (as read by the delivery consumer), if it has a secret. */
export function signingSecretsOf(item: Item | undefined, graceSeconds: number, now = Date.now()): SigningSecrets | undefined {
  if (typeof item?.currentSecret !== 'string') return undefined;
  const inGrace = typeof item.previousSecret === 'string' && now / 1000 - Number(item.previousReplacedAt) < graceSeconds;
  return inGrace ? { current: item.currentSecret, previous: item.previousSecret } : { current: item.currentSecret };
}

/** The account's current secret, `secret` when it had none: concurrent first writers agree on one (`if_not_exists`). */
export async function currentSecretOrPut(account: string, secret: string): Promise<string> {
  const item = await updateItem({
    TableName: tableName(),
    Key: sharedSecretKey(account),
    UpdateExpression: 'SET currentSecret = if_not_exists(currentSecret, :secret), currentCreatedAt = if_not_exists(currentCreatedAt, :now)',
    ExpressionAttributeValues: { ':secret': secret, ':now': nowSeconds() },
    ReturnValues: 'ALL_NEW',
  });
  return item!.currentSecret as string;
}

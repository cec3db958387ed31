import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { getItem, putItem, type Item } from './items';
import { chainCheckpointKey, chainLeaseKey, tokenMetadataKey } from './table';

/** A block the follower has finished: every notification of it is recorded. */
export interface BlockRef {
  number: number;
  hash: string;
}

/** How far a chain has been followed, with the hashes of the last blocks, to find where a reorganisation forked. */
export interface Checkpoint extends BlockRef {
  recent: BlockRef[];
}

/** Enough to walk back over any reorganisation a followed chain may make below its confirmation depth. */
export const RECENT_BLOCKS_KEPT = 256;

export async function getCheckpoint(chainId: string): Promise<Checkpoint | undefined> {
  const item = await getItem({ TableName: tableName(), Key: chainCheckpointKey(chainId), ConsistentRead: true });
  if (!item) return undefined;
  return { number: item.number, hash: item.hash, recent: (item.recent as [number, string][]).map(([number, hash]) => ({ number, hash })) };
}

/**
 * Moves the checkpoint from `from` (absent: none yet) to `to`, only if it still is at `from`: two
 * followers that raced (a lease that ran out under a slow one) cannot move it past each other.
 * Returns whether it moved.
 */
export function moveCheckpoint(chainId: string, from: Checkpoint | undefined, to: Checkpoint): Promise<boolean> {
  const item: Item = {
    ...chainCheckpointKey(chainId),
    number: to.number,
    hash: to.hash,
    recent: to.recent.slice(-RECENT_BLOCKS_KEPT).map(({ number, hash }) => [number, hash]),
    updatedAt: Date.now(),
  };
  return conditionHeld(
    putItem({
      TableName: tableName(),
      Item: item,
      ...(from
        ? {
            ConditionExpression: '#number = :number AND #hash = :hash',
            ExpressionAttributeNames: { '#number': 'number', '#hash': 'hash' },
            ExpressionAttributeValues: { ':number': from.number, ':hash': from.hash },
          }
        : { ConditionExpression: 'attribute_not_exists(pk)' }),
    }),
  );
}

/**
 * Takes or renews the chain's lease for `holder` until `until` (ms): held by nobody, run out, or
 * already this holder's. Returns whether the holder has it.
 */
export function takeChainLease(chainId: string, holder: string, until: number, now = Date.now()): Promise<boolean> {
  return conditionHeld(
    putItem({
      TableName: tableName(),
      Item: { ...chainLeaseKey(chainId), holder, until },
      ConditionExpression: 'attribute_not_exists(pk) OR #until < :now OR holder = :holder',
      ExpressionAttributeNames: { '#until': 'until' },
      ExpressionAttributeValues: { ':now': now, ':holder': holder },
    }),
  );
}

/** Gives the lease up at a clean stop, so that the next follower need not wait for it to run out. */
export async function releaseChainLease(chainId: string, holder: string): Promise<void> {
  await conditionHeld(
    putItem({
      TableName: tableName(),
      Item: { ...chainLeaseKey(chainId), holder: '', until: 0 },
      ConditionExpression: 'holder = :holder',
      ExpressionAttributeValues: { ':holder': holder },
    }),
  );
}

export interface TokenMetadata {
  name: string;
  symbol: string;
  decimals: number;
}

export async function getTokenMetadata(chainId: string, address: string): Promise<TokenMetadata | undefined> {
  const item = await getItem({ TableName: tableName(), Key: tokenMetadataKey(chainId, address) });
  return item && { name: item.name, symbol: item.symbol, decimals: item.decimals };
}

export async function putTokenMetadata(chainId: string, address: string, metadata: TokenMetadata): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...tokenMetadataKey(chainId, address), ...metadata } });
}

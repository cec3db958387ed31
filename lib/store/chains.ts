import { tableName } from './client';
import { conditionHeld } from './conditional-write';
import { deleteItem, getItem, putItem, queryAllItems, queryItems, type Item } from './items';
import { releaseLease, takeLease, type LeaseSite } from './leases';
import type { TraceMethod } from '../config/chains';
import type { FollowerFault, FollowerState, RPC_SOURCES } from '../schemas/chains';
import { chainBackfillLeaseKey, chainCheckpointKey, chainFollowerStatusKey, chainHeadKey, chainLeaseKey, QUARANTINE_SORT_KEY_PREFIX, quarantinedBlockKey, tokenMetadataKey } from './table';

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

/**
 * The chain's checkpoint; none when never written, or when written without its block's hash (see
 * getUnhashedCheckpoint): such a checkpoint cannot be checked against the chain.
 */
export async function getCheckpoint(chainId: string): Promise<Checkpoint | undefined> {
  const item = await getItem({ TableName: tableName(), Key: chainCheckpointKey(chainId), ConsistentRead: true });
  if (!item?.hash) return undefined;
  return { number: item.number, hash: item.hash, recent: (item.recent as [number, string][]).map(([number, hash]) => ({ number, hash })) };
}

/** A checkpoint written without its block's hash, by a follower that took a node's `null` for a block as an empty block. */
export interface UnhashedCheckpoint {
  number: number;
  /** The blocks it kept without a hash: blocks taken as `null`, their notifications never recorded. */
  unhashed: number[];
}

/** The chain's checkpoint when it was written without its block's hash; moveCheckpoint from `undefined` writes over it. */
export async function getUnhashedCheckpoint(chainId: string): Promise<UnhashedCheckpoint | undefined> {
  const item = await getItem({ TableName: tableName(), Key: chainCheckpointKey(chainId), ConsistentRead: true });
  if (!item || item.hash) return undefined;
  const recent = (item.recent ?? []) as [number, string?][];
  return { number: item.number, unhashed: recent.filter(([, hash]) => !hash).map(([number]) => number) };
}

/**
 * Moves the checkpoint from `from` (absent: none yet, see getCheckpoint) to `to`, only if it still is at `from`: two
 * followers that raced (a lease that ran out under a slow one) cannot move it past each other.
 * Returns whether it moved.
 */
export async function moveCheckpoint(chainId: string, from: Checkpoint | undefined, to: Checkpoint): Promise<boolean> {
  if (!to.hash || to.recent.some((block) => !block.hash)) throw new Error(`chain ${chainId}: a checkpoint without a block hash (block ${to.number}) is never stored`);
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
        : { ConditionExpression: 'attribute_not_exists(#hash)', ExpressionAttributeNames: { '#hash': 'hash' } }),
    }),
  );
}

/** Which of a chain's leases: its follower's or its backfill runner's. */
export type ChainLeaseRole = 'follower' | 'backfills';

const chainLeaseSite = (chainId: string, role: ChainLeaseRole): LeaseSite => ({
  key: role === 'follower' ? chainLeaseKey(chainId) : chainBackfillLeaseKey(chainId),
  holder: 'holder',
  expiresAt: 'until',
  kept: 'its own item',
});

/**
 * Takes or renews the chain's lease (`role`'s) for `holder` until `until` (ms): held by nobody, run
 * out, or already this holder's. Returns whether the holder has it.
 */
export async function takeChainLease(chainId: string, holder: string, until: number, now = Date.now(), role: ChainLeaseRole = 'follower'): Promise<boolean> {
  return (await takeLease(chainLeaseSite(chainId, role), holder, until, now)) !== undefined;
}

/** Gives the lease up at a clean stop, so that the next follower need not wait for it to run out. */
export async function releaseChainLease(chainId: string, holder: string, role: ChainLeaseRole = 'follower'): Promise<void> {
  await releaseLease(chainLeaseSite(chainId, role), holder);
}

/** The chain's head as its follower last saw it, and when (ms). */
export interface ChainHead {
  number: number;
  seenAt: number;
}

export async function recordChainHead(chainId: string, head: ChainHead): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...chainHeadKey(chainId), ...head } });
}

export async function getChainHead(chainId: string): Promise<ChainHead | undefined> {
  const item = await getItem({ TableName: tableName(), Key: chainHeadKey(chainId) });
  return item && { number: item.number, seenAt: item.seenAt };
}

/** What a chain's follower says of itself, recorded with the head (GET /v1/chains). */
export interface FollowerStatus {
  /** As the follower saw it; `notRunning` is what a reader concludes from an old `recordedAt`. */
  state: Exclude<FollowerState, 'notRunning'>;
  stalledSince?: number;
  lastError?: FollowerFault;
  traceMethod?: TraceMethod;
  rpc: (typeof RPC_SOURCES)[number];
  /** When (ms). */
  recordedAt: number;
  /** The checkpoint, and since when it has stayed there while the chain had blocks after it: the next follower (a Lambda's next run) goes on counting from it. */
  behind?: { checkpoint: number; since: number };
}

export async function recordFollowerStatus(chainId: string, status: FollowerStatus): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...chainFollowerStatusKey(chainId), ...status } });
}

export async function getFollowerStatus(chainId: string): Promise<FollowerStatus | undefined> {
  const item = await getItem({ TableName: tableName(), Key: chainFollowerStatusKey(chainId) });
  if (!item) return undefined;
  const { state, stalledSince, lastError, traceMethod, rpc, recordedAt, behind } = item;
  return {
    state,
    rpc,
    recordedAt,
    ...(stalledSince !== undefined ? { stalledSince } : {}),
    ...(lastError ? { lastError } : {}),
    ...(traceMethod ? { traceMethod } : {}),
    ...(behind ? { behind } : {}),
  };
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

/** A block the follower went past without recording its notifications, after failing on it for a reason that does not go away. */
export interface QuarantinedBlock {
  number: number;
  /** The block's hash as the follower fetched it; absent when the block itself could not be read. */
  hash?: string;
  /** The error's name and message, without the RPC URL. */
  reason: string;
  /** The attempts made before it was quarantined (or, after a failed retake, in all). */
  attempts: number;
  /** Milliseconds since the epoch. */
  quarantinedAt: number;
  /** Present when only this webhook's notifications of the block were not recorded (the others were). */
  webhookId?: string;
  /** The webhook's account, with `webhookId`. */
  account?: string;
}

export async function putQuarantinedBlock(chainId: string, block: QuarantinedBlock): Promise<void> {
  await putItem({ TableName: tableName(), Item: { ...quarantinedBlockKey(chainId, block.number, block.webhookId), ...block } });
}

/** The block's quarantine records: the whole block's, or one per webhook whose notifications of it were not recorded. */
export async function quarantineRecordsOf(chainId: string, number: number): Promise<QuarantinedBlock[]> {
  const key = quarantinedBlockKey(chainId, number);
  const { items } = await queryAllItems({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': key.pk, ':prefix': key.sk },
    ConsistentRead: true,
  });
  return items.map(toQuarantinedBlock);
}

const quarantinedBlocksQuery = (chainId: string) => ({
  TableName: tableName(),
  KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
  ExpressionAttributeValues: { ':pk': quarantinedBlockKey(chainId, 0).pk, ':prefix': QUARANTINE_SORT_KEY_PREFIX },
});

/** The chain's quarantined blocks, oldest first: the operator's full list. */
export async function listQuarantinedBlocks(chainId: string): Promise<QuarantinedBlock[]> {
  const { items } = await queryAllItems({ ...quarantinedBlocksQuery(chainId), ConsistentRead: true });
  return items.map(toQuarantinedBlock);
}

/** What anyone may be shown of a quarantined block: never its reason, nor the webhook it failed on. */
export type QuarantinedBlockShown = Pick<QuarantinedBlock, 'number' | 'hash' | 'quarantinedAt'>;

/**
 * How many blocks of the chain are quarantined whole, and the newest `limit` of them, newest first.
 * A record of one webhook's notifications (its `webhookId`) is that account's matter, not shown to
 * others. At most `counted` records are read.
 */
export async function newestQuarantinedBlocks(chainId: string, limit: number, counted: number): Promise<{ count: number; newest: QuarantinedBlockShown[] }> {
  const { items } = await queryItems({
    ...quarantinedBlocksQuery(chainId),
    ScanIndexForward: false,
    Limit: counted,
    FilterExpression: 'attribute_not_exists(webhookId)',
    ProjectionExpression: '#number, #hash, quarantinedAt',
    ExpressionAttributeNames: { '#number': 'number', '#hash': 'hash' },
  });
  const blocks = items.map(({ number, hash, quarantinedAt }): QuarantinedBlockShown => ({ number, ...(hash ? { hash } : {}), quarantinedAt }));
  return { count: blocks.length, newest: blocks.slice(0, limit) };
}

export async function deleteQuarantinedBlock(chainId: string, number: number, webhookId?: string): Promise<void> {
  await deleteItem({ TableName: tableName(), Key: quarantinedBlockKey(chainId, number, webhookId) });
}

function toQuarantinedBlock(item: Item): QuarantinedBlock {
  const { number, hash, reason, attempts, quarantinedAt, webhookId, account } = item;
  return { number, ...(hash ? { hash } : {}), reason, attempts, quarantinedAt, ...(webhookId ? { webhookId, account } : {}) };
}

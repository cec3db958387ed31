/**
 * Quarantined blocks (docs/chain-follower.md): what the follower went past after failing on them
 * QUARANTINE_AFTER_ATTEMPTS times, and how an operator takes one again once its cause is fixed.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ChainSettings } from '../config/chains';
import type { QueueSender } from '../deliveries/queue';
import { NotFound } from '../errors';
import { deleteQuarantinedBlock, listQuarantinedBlocks, putQuarantinedBlock, quarantineRecordsOf, type QuarantinedBlock } from '../store/chains';
import { describeFault } from './faults';
import { ChainFollower } from './follower';

export interface RetakenBlock {
  number: number;
  hash: string;
  /** Its notifications, recorded now or before (message ids are derived from the block, so none twice). */
  notifications: number;
  /** The hash the block had when it was quarantined, when the chain has another block there now. */
  replacedHash?: string;
}

/**
 * A retake that failed, described by `describeFault` alone: the error itself never escapes, as a
 * node's error message may hold the RPC URL, and with it the provider's key.
 */
export class RetakeFailed extends Error {
  override readonly name = 'RetakeFailed';
}

export const quarantinedBlocks = (chain: ChainSettings): Promise<QuarantinedBlock[]> => listQuarantinedBlocks(chain.chainId);

/** What an operator asks of a chain's quarantined blocks (functions/quarantined-blocks.ts): `{}` lists them, `{"retake": <block>}` takes one again. */
export interface QuarantineRequest {
  retake?: unknown;
}

export async function answerQuarantineRequest(
  chain: ChainSettings,
  request: QuarantineRequest | null,
  log: Logger,
  queue: QueueSender,
): Promise<{ quarantined: QuarantinedBlock[] } | { retaken: RetakenBlock }> {
  const retake = request?.retake;
  if (retake === undefined) return { quarantined: await quarantinedBlocks(chain) };
  if (typeof retake !== 'number' || !Number.isSafeInteger(retake) || retake < 0) {
    throw new TypeError(`retake must be a block number, got ${JSON.stringify(retake)?.slice(0, 80)}`);
  }
  return { retaken: await retakeQuarantinedBlock(chain, retake, log, queue) };
}

/**
 * Takes a quarantined block again: records its notifications and, once that succeeds, removes its
 * quarantine record. On failure the record stays, with the new reason and one more attempt. The
 * block is the one the chain has at that number now.
 */
export async function retakeQuarantinedBlock(chain: ChainSettings, number: number, log: Logger, queue: QueueSender): Promise<RetakenBlock> {
  const records = await quarantineRecordsOf(chain.chainId, number);
  const quarantined = records[0];
  if (!quarantined) throw new NotFound(`Block ${number} of chain ${chain.chainId} is not quarantined`);
  // Records of single webhooks: only their notifications are recorded again; the others' were.
  const webhookIds = records.every((record) => record.webhookId) ? new Set(records.map((record) => record.webhookId!)) : undefined;
  const follower = new ChainFollower(chain, log, queue);
  const data = await follower.blocks.blockAt(number).catch((error: unknown) => {
    throw new RetakeFailed(`block ${number} of chain ${chain.chainId} could not be read: ${describeFault(error, chain.rpcUrl)}`);
  });
  let notifications: number;
  try {
    notifications = await follower.take([data], webhookIds);
    follower.blocks.countUntraced([data], {});
  } catch (error) {
    const reason = describeFault(error, chain.rpcUrl);
    await Promise.all(records.map((record) => putQuarantinedBlock(chain.chainId, { ...record, attempts: record.attempts + 1, reason })));
    throw new RetakeFailed(`block ${number} of chain ${chain.chainId} failed again: ${reason}`);
  }
  await Promise.all(records.map((record) => deleteQuarantinedBlock(chain.chainId, number, record.webhookId)));
  const retaken: RetakenBlock = { number, hash: data.block.hash, notifications };
  if (quarantined.hash && quarantined.hash !== data.block.hash) retaken.replacedHash = quarantined.hash;
  log.info('quarantined block retaken', { chainId: chain.chainId, ...retaken });
  return retaken;
}

/** Which chains this service follows: the refusal of a webhook on another, and GET /v1/chains. */
import type { PublicChainFacts } from '../config/chains';
import { runtimeConfig } from '../config/runtime';
import { BadRequest } from '../errors';
import { QUARANTINED_BLOCKS_SHOWN, QUARANTINE_RECORDS_COUNTED, type ChainInfo, type ChainList } from '../schemas/chains';
import { getChainHead, getCheckpoint, getFollowerStatus, newestQuarantinedBlocks, type FollowerStatus } from '../store/chains';

/** Longer than a follower's pause between steps, or a hand-over between two follower functions on AWS. */
const HEAD_STALE_AFTER_MS = 120_000;

/** A webhook on a chain nobody follows would be accepted and never notified: refused instead. */
export function assertChainFollowed(chainId: string): void {
  const followed = runtimeConfig().followedChains.map((chain) => chain.chainId);
  if (followed.includes(chainId)) return;
  throw new BadRequest(
    `Invalid body field chainId: chain ${chainId} is not followed by this service; followed chains: ${followed.join(', ') || 'none'} (GET /v1/chains lists them)`,
  );
}

export async function listFollowedChains(now = Date.now()): Promise<ChainList> {
  return { chains: await Promise.all(runtimeConfig().followedChains.map((chain) => followedChainInfo(chain, now))) };
}

async function followedChainInfo(chain: PublicChainFacts, now: number): Promise<ChainInfo> {
  const [checkpoint, head, status, quarantinedBlocks] = await Promise.all([
    getCheckpoint(chain.chainId),
    getChainHead(chain.chainId),
    getFollowerStatus(chain.chainId),
    newestQuarantinedBlocks(chain.chainId, QUARANTINED_BLOCKS_SHOWN, QUARANTINE_RECORDS_COUNTED),
  ]);
  // The follower records the head it saw after the step that moved the checkpoint: in between, a
  // block taken is newer than the head recorded, and was seen.
  const headBlock = head && Math.max(head.number, checkpoint?.number ?? 0);
  return {
    chainId: chain.chainId,
    status: head && now - head.seenAt <= HEAD_STALE_AFTER_MS ? 'OK' : 'UNAVAILABLE',
    chainName: chain.chainName,
    description: `${chain.chainName}, followed for address_activity webhooks`,
    ...(chain.avalanche ?? {}),
    vmName: 'EVM',
    explorerUrl: chain.explorerUrl,
    rpcUrl: chain.publicRpcUrl,
    isTestnet: chain.isTestnet,
    networkToken: chain.networkToken,
    private: false,
    enabledFeatures: ['webhooks'],
    follower: {
      ...followerStatusShown(status, now),
      checkpointBlock: checkpoint?.number,
      headBlock,
      headSeenAt: head?.seenAt,
      lag: checkpoint && headBlock !== undefined ? headBlock - checkpoint.number : undefined,
      quarantinedBlocks,
    },
  };
}

/** What the follower said of itself, when it said it lately; else it is not running (its last failure is still shown). */
function followerStatusShown(status: FollowerStatus | undefined, now: number): Pick<ChainInfo['follower'], 'state' | 'stalledSince' | 'lastError' | 'traceMethod' | 'rpc'> {
  if (!status) return { state: 'notRunning' };
  const { state, stalledSince, lastError, traceMethod, rpc, recordedAt } = status;
  const running = now - recordedAt <= HEAD_STALE_AFTER_MS;
  return { state: running ? state : 'notRunning', ...(running && stalledSince !== undefined ? { stalledSince } : {}), lastError, traceMethod, rpc };
}

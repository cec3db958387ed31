import { TRACE_METHODS } from '../config/chains';
import * as z from './zod';

/** The hosted Data API's NetworkToken: the chain's own coin. */
const networkToken = z.object({
  name: z.string(),
  symbol: z.string(),
  decimals: z.number().int(),
  logoUri: z.string().optional(),
  description: z.string().optional(),
});

/** The quarantined blocks a chain shows beside their count: the operator's list (docs/chain-follower.md) has them all. */
export const QUARANTINED_BLOCKS_SHOWN = 10;
/** Quarantine records read at most to count a chain's quarantined blocks: any caller may ask, often. */
export const QUARANTINE_RECORDS_COUNTED = 1000;

/** What the follower is doing (docs/chain-follower.md, "The follower's status"). */
export const FOLLOWER_STATES = ['following', 'catchingUp', 'stalled', 'unreachable', 'stopped', 'notRunning'] as const;
export type FollowerState = (typeof FOLLOWER_STATES)[number];
/** Whether the follower uses the RPC URL an operator configured or the chain's public endpoint; never the URL itself. */
export const RPC_SOURCES = ['configured', 'public'] as const;

export const followerFault = z
  .object({
    kind: z.string().describe('A short category: "timeout", "connection refused (ECONNREFUSED)", "HTTP status 503", "JSON-RPC error -32000", "store error (...)", "wrong chain: ..."; never a URL'),
    since: z.number().int().describe('When failures of this kind began, without a success between: milliseconds since the Unix epoch'),
    at: z.number().int().describe('When the last one happened: milliseconds since the Unix epoch'),
  })
  .describe("The follower's last failure: the node's or the store's");
export type FollowerFault = z.infer<typeof followerFault>;

/** Ours, beside the hosted fields: how far the service has followed the chain. Block numbers are absent until the follower's first step. */
const followerState = z.object({
  state: z
    .enum(FOLLOWER_STATES)
    .describe(
      'following: at the head; catchingUp: behind, the checkpoint moving; stalled: the checkpoint has not moved for a while (stalledSince) though the chain has blocks after it; unreachable: the node does not answer its head (lastError says why); stopped: the node is not the configured chain, nothing is followed (lastError); notRunning: no follower has reported for two minutes',
    ),
  stalledSince: z.number().int().optional().describe('With state stalled: since when the checkpoint has not moved while the chain had blocks after it, milliseconds since the Unix epoch'),
  lastError: followerFault.optional(),
  traceMethod: z.enum(TRACE_METHODS).optional().describe("How internal transactions are asked of the node: off when it serves no traces; absent until the follower has found out"),
  rpc: z.enum(RPC_SOURCES).optional().describe("configured: the follower uses the RPC URL an operator gave (never shown: providers put keys in it); public: the chain's public endpoint, rpcUrl"),
  checkpointBlock: z.number().int().optional().describe('The last block whose notifications are all recorded'),
  headBlock: z.number().int().optional().describe("The chain's head as the follower last saw it"),
  headSeenAt: z.number().int().optional().describe('When the follower last saw the head: milliseconds since the Unix epoch'),
  lag: z.number().int().optional().describe('headBlock minus checkpointBlock, in blocks'),
  quarantinedBlocks: z
    .object({
      count: z.number().int().describe(`How many blocks of the chain are quarantined whole (counted up to ${QUARANTINE_RECORDS_COUNTED}); one webhook's notifications quarantined alone are not shown`),
      newest: z
        .array(
          z.object({
            number: z.number().int(),
            hash: z.string().optional(),
            quarantinedAt: z.number().int().describe('Milliseconds since the Unix epoch'),
          }),
        )
        .max(QUARANTINED_BLOCKS_SHOWN)
        .describe(`The newest ${QUARANTINED_BLOCKS_SHOWN} of them, newest first`),
    })
    .describe(
      'Blocks the follower went past without notifying them, after failing on them for a reason that does not go away; their reasons are for the operator (docs/chain-follower.md)',
    ),
});

/** The hosted Data API's ChainInfo (what its SDK's `data.evm.chains.list()` parses), with `follower` beside it. */
export const chainInfo = z.object({
  chainId: z.string().describe('The EVM chain id, in decimal'),
  status: z
    .enum(['OK', 'UNAVAILABLE'])
    .describe("UNAVAILABLE: the follower has not seen the chain's head for over two minutes (its node is down, or no follower runs)"),
  chainName: z.string(),
  description: z.string(),
  platformChainId: z.string().optional().describe("The chain's blockchain id on its Avalanche network"),
  subnetId: z.string().optional(),
  vmId: z.string().optional(),
  vmName: z.enum(['EVM', 'BITCOIN', 'ETHEREUM']),
  explorerUrl: z.string().optional(),
  rpcUrl: z.string().describe("The chain's public JSON-RPC endpoint, or empty: never the provider URL the follower uses"),
  isTestnet: z.boolean(),
  networkToken,
  private: z.boolean(),
  enabledFeatures: z.array(z.enum(['nftIndexing', 'webhooks', 'teleporter'])),
  follower: followerState,
});
export type ChainInfo = z.infer<typeof chainInfo>;

/** The hosted Data API's ListChainsResponse. */
export const chainList = z.object({ chains: z.array(chainInfo) });
export type ChainList = z.infer<typeof chainList>;

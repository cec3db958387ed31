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

/** Ours, beside the hosted fields: how far the service has followed the chain. Block numbers are absent until the follower's first step. */
const followerState = z.object({
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

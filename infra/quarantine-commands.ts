/**
 * `npm run chain -- quarantine ...`: the quarantined blocks of a chain that `npm start` follows
 * (docs/chain-follower.md), listed or taken again, in the running service's store.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { quarantinedBlocks, retakeQuarantinedBlock } from '../lib/chains/quarantine';
import { NO_QUEUE } from '../lib/deliveries/queue';
import { chainsFromEnvironment, devChainSettings, type ChainSettings } from '../lib/config/chains';
import { DEFAULT_DEV_CHAIN_ID } from './local/dev-chain';
import { useRunningStore } from './local/running-store';

export const QUARANTINE_USAGE = `  quarantine list [--chain <id>]                   the chain's quarantined blocks (default: the dev chain)
  quarantine retake <block>|--all [--chain <id>]   take quarantined blocks again once their cause is fixed:
                                                   their notifications are recorded, their records removed
                                                   (uses npm start's store: DYNAMODB_PORT, DATA_DIR as for npm start;
                                                   a chain of CHAIN_RPC_URLS through its URL there)`;

export class QuarantineUsageError extends Error {}

/** Runs `quarantine list|retake` for `chainId`: a chain of CHAIN_RPC_URLS, else the dev chain at `devChainRpc`. */
export async function quarantineCommand(args: string[], options: { all: boolean; chainId: string; devChainRpc: string }): Promise<void> {
  const [action, block, ...extra] = args;
  const chain = settingsOf(options.chainId, options.devChainRpc);
  await useNpmStartStore();
  if (action === 'list' && block === undefined) {
    const blocks = await quarantinedBlocks(chain);
    if (blocks.length === 0) process.stdout.write(`No quarantined blocks on chain ${chain.chainId}.\n`);
    for (const { number, hash, attempts, quarantinedAt, reason, webhookId } of blocks) {
      const only = webhookId ? `  webhook ${webhookId} only` : '';
      process.stdout.write(`block ${number} ${hash ?? ''}${only}  quarantined ${new Date(quarantinedAt).toISOString()} after ${attempts} attempts\n  ${reason}\n`);
    }
    return;
  }
  if (action !== 'retake' || extra.length > 0 || (block === undefined) === !options.all) {
    throw new QuarantineUsageError('quarantine takes list, or retake with one block number or --all');
  }
  if (block !== undefined && !/^\d+$/.test(block)) throw new QuarantineUsageError(`the block must be a block number, got '${block}'`);
  // A block with many webhooks quarantined is retaken once, for all of them.
  const numbers = block !== undefined ? [Number(block)] : [...new Set((await quarantinedBlocks(chain)).map(({ number }) => number))];
  const log = new Logger({ serviceName: 'chain-cli', logLevel: 'WARN' });
  for (const number of numbers) {
    // This process reaches no queue: the running service's sweep takes the recorded notifications up within seconds.
    const retaken = await retakeQuarantinedBlock(chain, number, log, NO_QUEUE);
    const replaced = retaken.replacedHash ? ` (the chain replaced ${retaken.replacedHash} there)` : '';
    process.stdout.write(`block ${number} ${retaken.hash} retaken: ${retaken.notifications} notifications recorded${replaced}\n`);
  }
  if (numbers.length === 0) process.stdout.write(`No quarantined blocks on chain ${chain.chainId}.\n`);
}

/** The chain `npm start` follows as `chainId`: one of CHAIN_RPC_URLS, or its dev chain; any other is refused. */
function settingsOf(chainId: string, devChainRpc: string): ChainSettings {
  const configured = chainsFromEnvironment(process.env);
  const devChainId = process.env.DEV_CHAIN_ID || DEFAULT_DEV_CHAIN_ID;
  const chain = configured.find((one) => one.chainId === chainId) ?? (chainId === devChainId ? devChainSettings(chainId, devChainRpc) : undefined);
  if (!chain) {
    const followed = [devChainId, ...configured.map((one) => one.chainId)].join(', ');
    throw new QuarantineUsageError(`chain ${chainId} is not followed by npm start (followed: ${followed}; CHAIN_RPC_URLS adds chains)`);
  }
  return chain;
}

/** The store npm start runs: the blocks are in it. */
async function useNpmStartStore(): Promise<void> {
  const running = await useRunningStore();
  if (running.at === 'nothing') throw new Error(`nothing listens on port ${running.port} (DYNAMODB_PORT): is npm start running?`);
}

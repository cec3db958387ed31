import { ConfigurationError } from './runtime';

/** The chain's own coin, as notifications name it in `networkToken`. */
export interface NetworkToken {
  name: string;
  symbol: string;
  decimals: number;
}

/** A chain the service follows: where its node is and how far to trust its blocks. */
export interface ChainSettings {
  chainId: string;
  rpcUrl: string;
  /** How deep a block must be before its activity is notified: 0 on chains final on acceptance. */
  confirmations: number;
  /** Whether the node serves `debug_traceBlockByHash` with the callTracer (internal transactions). */
  traces: boolean;
  networkToken: NetworkToken;
  /** How often the head is asked for when the follower has caught up. */
  pollIntervalMs: number;
  /**
   * The first checkpoint of a chain followed for the first time: blocks after it are notified.
   * Absent: the chain's safe block at the follower's first step (its history is not notified).
   */
  firstCheckpoint?: number;
}

export type KnownChain = Omit<ChainSettings, 'chainId' | 'rpcUrl'> & {
  /** The chain's public endpoint: what a stack's RPC URL secret holds until a provider's URL replaces it. */
  publicRpcUrl: string;
};

const AVAX: NetworkToken = { name: 'Avalanche', symbol: 'AVAX', decimals: 18 };

/** Chains whose settings need nothing but an RPC URL: Avalanche's C-Chain and Fuji are final on acceptance. */
export const KNOWN_CHAINS: Record<string, KnownChain> = {
  '43114': { confirmations: 0, traces: true, networkToken: AVAX, pollIntervalMs: 500, publicRpcUrl: 'https://api.avax.network/ext/bc/C/rpc' },
  '43113': { confirmations: 0, traces: true, networkToken: AVAX, pollIntervalMs: 500, publicRpcUrl: 'https://api.avax-test.network/ext/bc/C/rpc' },
};

const ETHER: NetworkToken = { name: 'Ether', symbol: 'ETH', decimals: 18 };

/**
 * The local dev chain (anvil): final at once, traced, polled often so a notification follows its
 * transaction within a second, and followed from its genesis block, so that a transaction sent
 * before the follower's first step is notified too.
 */
export function devChainSettings(chainId: string, rpcUrl: string): ChainSettings {
  return { chainId, rpcUrl, confirmations: 0, traces: true, networkToken: ETHER, pollIntervalMs: 100, firstCheckpoint: 0 };
}

/**
 * Chains added locally through the environment:
 * - CHAIN_RPC_URLS: `43114=https://...,1=https://...`;
 * - CHAIN_CONFIRMATIONS: `1=12`, required for a chain not in KNOWN_CHAINS;
 * - CHAIN_TRACES: `1=false`, whether the node serves traces (default true);
 * - CHAIN_NATIVE_TOKENS: `137=POL:Polygon Ecosystem Token:18` (default ETH, Ether, 18 decimals).
 */
export function chainsFromEnvironment(env: NodeJS.ProcessEnv): ChainSettings[] {
  const urls = pairs(env, 'CHAIN_RPC_URLS', 'chainId=url');
  const confirmations = pairs(env, 'CHAIN_CONFIRMATIONS', 'chainId=blocks');
  const traces = pairs(env, 'CHAIN_TRACES', 'chainId=true|false');
  const tokens = pairs(env, 'CHAIN_NATIVE_TOKENS', 'chainId=SYMBOL:Name:decimals');
  return [...urls].map(([chainId, rpcUrl]) => {
    if (!/^[1-9]\d{0,18}$/.test(chainId)) throw new ConfigurationError(`CHAIN_RPC_URLS: '${chainId}' is not a chain id`);
    try {
      if (!/^https?:$/.test(new URL(rpcUrl).protocol)) throw new Error();
    } catch {
      throw new ConfigurationError(`CHAIN_RPC_URLS: the URL of chain ${chainId} must be an http(s) URL`);
    }
    const known = KNOWN_CHAINS[chainId];
    const depth = confirmations.get(chainId);
    if (depth === undefined && !known) {
      throw new ConfigurationError(`chain ${chainId} needs a confirmations value: CHAIN_CONFIRMATIONS=${chainId}=<blocks>`);
    }
    const blocks = depth === undefined ? known!.confirmations : Number(depth);
    if (!Number.isInteger(blocks) || blocks < 0 || blocks > 1000) {
      throw new ConfigurationError(`CHAIN_CONFIRMATIONS: chain ${chainId} needs a whole number of blocks from 0 to 1000, got '${depth}'`);
    }
    const traced = traces.get(chainId);
    if (traced !== undefined && traced !== 'true' && traced !== 'false') {
      throw new ConfigurationError(`CHAIN_TRACES: chain ${chainId} must be true or false, got '${traced}'`);
    }
    return {
      chainId,
      rpcUrl,
      confirmations: blocks,
      traces: traced === undefined ? (known?.traces ?? true) : traced === 'true',
      networkToken: nativeToken(chainId, tokens.get(chainId)) ?? known?.networkToken ?? ETHER,
      pollIntervalMs: known?.pollIntervalMs ?? 1000,
    };
  });
}

function nativeToken(chainId: string, spec: string | undefined): NetworkToken | undefined {
  if (spec === undefined) return undefined;
  const [symbol, name, decimals] = spec.split(':');
  if (!symbol || !name || !/^\d{1,2}$/.test(decimals ?? '')) {
    throw new ConfigurationError(`CHAIN_NATIVE_TOKENS: chain ${chainId} needs SYMBOL:Name:decimals, got '${spec}'`);
  }
  return { symbol, name, decimals: Number(decimals) };
}

/** A `key=value,key=value` variable; the value may itself hold '=' (URLs with query strings). */
function pairs(env: NodeJS.ProcessEnv, name: string, form: string): Map<string, string> {
  const raw = env[name]?.trim();
  const result = new Map<string, string>();
  if (!raw) return result;
  for (const part of raw.split(',')) {
    const at = part.indexOf('=');
    if (at <= 0 || at === part.length - 1) throw new ConfigurationError(`${name} must be comma-separated ${form}, got '${part.trim()}'`);
    result.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  return result;
}

/** The follower's lag (head minus checkpoint, in blocks), published by the follower functions; the stack alarms on it. */
export const CHAIN_METRICS_NAMESPACE = 'Webhooks';
export const CHAIN_LAG_METRIC = 'ChainFollowerLag';

/**
 * The chain a follower function follows (CHAIN_ID), with the RPC URL read once per cold start from
 * the Secrets Manager secret the stack made for it (CHAIN_RPC_URL_SECRET_ARN): providers put keys in
 * their URLs.
 */
export async function followedChain(env: NodeJS.ProcessEnv): Promise<ChainSettings> {
  const chainId = env.CHAIN_ID ?? '';
  const known = KNOWN_CHAINS[chainId];
  if (!known) throw new ConfigurationError(`CHAIN_ID '${chainId}' is not a chain this stage can follow`);
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const { SecretString } = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: env.CHAIN_RPC_URL_SECRET_ARN }));
  const rpcUrl = SecretString?.trim() ?? '';
  if (!/^https?:\/\//.test(rpcUrl)) throw new ConfigurationError(`the RPC URL secret of chain ${chainId} does not hold an http(s) URL`);
  const { publicRpcUrl: _, ...settings } = known;
  return { chainId, rpcUrl, ...settings };
}

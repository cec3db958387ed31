import { ConfigurationError, runtimeConfig, type RuntimeConfig } from './runtime';

/** The chain's own coin, as notifications name it in `networkToken`. */
export interface NetworkToken {
  name: string;
  symbol: string;
  decimals: number;
}

/** What anyone may be shown of a followed chain (GET /v1/chains): its public facts, never the follower's RPC URL. */
export interface PublicChainFacts {
  chainId: string;
  chainName: string;
  isTestnet: boolean;
  networkToken: NetworkToken;
  /** The chain's public endpoint (the dev chain's local one), or '' when none is known: never a provider's URL, which holds its key. */
  publicRpcUrl: string;
  explorerUrl?: string;
  /** The chain's ids on its Avalanche network. */
  avalanche?: { platformChainId: string; subnetId: string; vmId: string };
}

/** A chain the service follows: where its node is and how far to trust its blocks. */
export interface ChainSettings extends PublicChainFacts {
  rpcUrl: string;
  /** How deep a block must be before its activity is notified: 0 on chains final on acceptance. */
  confirmations: number;
  /** How internal transactions are traced: `auto` asks the node which method it serves (lib/chains/traces.ts). */
  traces: ChainTraces;
  /** How often the head is asked for when the follower has caught up. */
  pollIntervalMs: number;
  /**
   * The first checkpoint of a chain followed for the first time: blocks after it are notified.
   * Absent: the chain's safe block at the follower's first step (its history is not notified).
   */
  firstCheckpoint?: number;
}

/**
 * CHAIN_TRACES: a tracing method (`trace_block`, `debug_traceBlockByHash`), `off`, or `auto`: the
 * fastest the node serves, found at start. `true` and `false` (earlier values) mean `auto` and `off`.
 */
export const TRACE_METHODS = ['trace_block', 'debug_traceBlockByHash', 'off'] as const;
/** How the follower gets a block's call trees: a method's name, or `off` (internal transactions are not notified). */
export type TraceMethod = (typeof TRACE_METHODS)[number];
export const CHAIN_TRACES_VALUES = ['auto', ...TRACE_METHODS] as const;
export type ChainTraces = (typeof CHAIN_TRACES_VALUES)[number];

/** `publicRpcUrl` is also what a stack's RPC URL secret holds until a provider's URL replaces it. */
export type KnownChain = Omit<ChainSettings, 'chainId' | 'rpcUrl'>;

const AVAX: NetworkToken = { name: 'Avalanche', symbol: 'AVAX', decimals: 18 };
/** The C-Chain's subnet (the Primary Network's) and virtual machine (coreth), the same on Mainnet and Fuji. */
const C_CHAIN = { subnetId: '11111111111111111111111111111111LpoYY', vmId: 'mgj786NP7uDwBCcq6YwThhaN8FLyybkCa4zBWTQbNgmK6k9A6' };

/** Chains whose settings need nothing but an RPC URL: Avalanche's C-Chain and Fuji are final on acceptance. */
export const KNOWN_CHAINS: Record<string, KnownChain> = {
  '43114': {
    chainName: 'Avalanche (C-Chain)',
    isTestnet: false,
    confirmations: 0,
    traces: 'auto',
    networkToken: AVAX,
    pollIntervalMs: 500,
    publicRpcUrl: 'https://api.avax.network/ext/bc/C/rpc',
    explorerUrl: 'https://subnets.avax.network/c-chain',
    avalanche: { platformChainId: '2q9e4r6Mu3U68nU1fYjgbR6JvwrRx36CohpAX5UQxse55x1Q5', ...C_CHAIN },
  },
  '43113': {
    chainName: 'Avalanche Fuji (C-Chain)',
    isTestnet: true,
    confirmations: 0,
    traces: 'auto',
    networkToken: AVAX,
    pollIntervalMs: 500,
    publicRpcUrl: 'https://api.avax-test.network/ext/bc/C/rpc',
    explorerUrl: 'https://subnets-test.avax.network/c-chain',
    avalanche: { platformChainId: 'yH8D7ThNJkxmtkuv2jgBa4P1Rn3Qpr4pPr7QYNfcdoS6k6HWp', ...C_CHAIN },
  },
};

const ETHER: NetworkToken = { name: 'Ether', symbol: 'ETH', decimals: 18 };

/**
 * The local dev chain (anvil): final at once, traced, polled often so a notification follows its
 * transaction within a second, and followed from its genesis block, so that a transaction sent
 * before the follower's first step is notified too.
 */
export function devChainSettings(chainId: string, rpcUrl: string): ChainSettings {
  return {
    chainId,
    chainName: 'Dev chain (anvil)',
    isTestnet: true,
    rpcUrl,
    publicRpcUrl: rpcUrl,
    confirmations: 0,
    traces: 'auto',
    networkToken: ETHER,
    pollIntervalMs: 100,
    firstCheckpoint: 0,
  };
}

/**
 * Chains added locally through the environment:
 * - CHAIN_RPC_URLS: `43114=https://...,1=https://...`;
 * - CHAIN_CONFIRMATIONS: `1=12`, required for a chain not in KNOWN_CHAINS;
 * - CHAIN_TRACES: `1=off`, how the node is traced (CHAIN_TRACES_VALUES; default auto);
 * - CHAIN_NATIVE_TOKENS: `137=POL:Polygon Ecosystem Token:18` (default ETH, Ether, 18 decimals).
 */
export function chainsFromEnvironment(env: NodeJS.ProcessEnv): ChainSettings[] {
  const urls = pairs(env, 'CHAIN_RPC_URLS', 'chainId=url');
  const confirmations = pairs(env, 'CHAIN_CONFIRMATIONS', 'chainId=blocks');
  const traces = pairs(env, 'CHAIN_TRACES', `chainId=${CHAIN_TRACES_VALUES.join('|')}`);
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
    const tracing = traced === 'true' ? 'auto' : traced === 'false' ? 'off' : traced;
    if (tracing !== undefined && !(CHAIN_TRACES_VALUES as readonly string[]).includes(tracing)) {
      throw new ConfigurationError(`CHAIN_TRACES: chain ${chainId} must be one of ${CHAIN_TRACES_VALUES.join(', ')}, got '${traced}'`);
    }
    return {
      ...publicFactsOf(chainId),
      rpcUrl,
      confirmations: blocks,
      traces: (tracing as ChainTraces | undefined) ?? known?.traces ?? 'auto',
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
/** The `service` dimension of the followers' metrics. */
export const CHAIN_METRICS_SERVICE = 'chain-follower';
export const CHAIN_LAG_METRIC = 'ChainFollowerLag';
/** Blocks a follower quarantined (docs/chain-follower.md); the stack alarms on any. */
export const CHAIN_QUARANTINE_METRIC = 'ChainBlocksQuarantined';

let followedChainOfProcess: Promise<ChainSettings> | undefined;

/**
 * The chain a follower function (or its operator function) follows, read once per cold start: after
 * a failure, read again at the next call.
 */
export function followedChainOnce(): Promise<ChainSettings> {
  followedChainOfProcess ??= followedChain(runtimeConfig().followerChain).catch((error: unknown) => {
    followedChainOfProcess = undefined;
    throw error;
  });
  return followedChainOfProcess;
}

/**
 * The chain a follower function follows, with the RPC URL read from the Secrets Manager secret the
 * stack made for it: providers put keys in their URLs.
 */
async function followedChain(followerChain: RuntimeConfig['followerChain']): Promise<ChainSettings> {
  const chainId = followerChain?.chainId ?? '';
  const known = KNOWN_CHAINS[chainId];
  if (!known) throw new ConfigurationError(`CHAIN_ID '${chainId}' is not a chain this stage can follow`);
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const { SecretString } = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: followerChain?.rpcUrlSecretArn }));
  const rpcUrl = SecretString?.trim() ?? '';
  if (!/^https?:\/\//.test(rpcUrl)) throw new ConfigurationError(`the RPC URL secret of chain ${chainId} does not hold an http(s) URL`);
  return { chainId, rpcUrl, ...known };
}

/** A chain's public facts: a known chain's, else a name made of its id, Ether, and no public URL. */
export function publicFactsOf(chainId: string): PublicChainFacts {
  const known = KNOWN_CHAINS[chainId];
  if (!known) return { chainId, chainName: `Chain ${chainId}`, isTestnet: false, networkToken: ETHER, publicRpcUrl: '' };
  return publicFacts({ chainId, ...known });
}

/** Only the public facts of a chain's settings: what leaves the process that holds its RPC URL. */
export function publicFacts({ chainId, chainName, isTestnet, networkToken, publicRpcUrl, explorerUrl, avalanche }: PublicChainFacts): PublicChainFacts {
  return { chainId, chainName, isTestnet, networkToken, publicRpcUrl, explorerUrl, avalanche };
}

/**
 * FOLLOWED_CHAINS: the public facts of the chains this service follows (JSON), for a process that
 * follows other chains than its stage's (tests, the bench); `npm start` hands its processes theirs in
 * their configuration. Absent: the stage's `followedChains`, each followed by a function on AWS.
 */
export const FOLLOWED_CHAINS_VARIABLE = 'FOLLOWED_CHAINS';

export function encodeFollowedChains(chains: PublicChainFacts[]): string {
  return JSON.stringify(chains.map(publicFacts));
}

export function followedChainsFrom(env: NodeJS.ProcessEnv, stageChainIds: string[]): PublicChainFacts[] {
  const encoded = env[FOLLOWED_CHAINS_VARIABLE];
  if (!encoded) return stageChainIds.map(publicFactsOf);
  let chains: unknown;
  try {
    chains = JSON.parse(encoded);
  } catch {
    // handled below
  }
  if (!Array.isArray(chains) || !chains.every((chain) => typeof chain?.chainId === 'string' && typeof chain.chainName === 'string')) {
    throw new ConfigurationError(`${FOLLOWED_CHAINS_VARIABLE} must be the JSON list encodeFollowedChains writes, got '${encoded.slice(0, 80)}'`);
  }
  return chains as PublicChainFacts[];
}

/** The follower's stall (functions/follow-chain.ts): seconds since its checkpoint last moved while the chain had blocks after it, 0 when it is not stalled; the stack alarms on it. */
export const CHAIN_STALLED_METRIC = 'ChainFollowerStalledSeconds';
/** Transactions notified without their internal transactions, their traces not to be had (docs/chain-follower.md); the stack alarms on any. */
export const CHAIN_TRACES_OMITTED_METRIC = 'ChainTracesOmitted';

import { answer, api, type Chain } from '../api/client';

/** The chains the service follows: the only ones a webhook can be made on. */
export async function loadChains(signal?: AbortSignal): Promise<Chain[]> {
  return (await answer(api.GET('/v1/chains', { signal }))).chains;
}

/** "Avalanche C-Chain (43114)", or the id alone while the chains are loading or for one no longer followed. */
export function chainLabel(chains: Chain[] | undefined, chainId: string): string {
  const chain = chains?.find((candidate) => candidate.chainId === chainId);
  return chain ? `${chain.chainName} (${chainId})` : chainId;
}

type Follower = Chain['follower'];

const STATE_LABELS: Record<Follower['state'], string> = {
  following: 'following',
  catchingUp: 'catching up',
  stalled: 'stalled',
  unreachable: 'node unreachable',
  stopped: 'stopped',
  notRunning: 'not running',
};

/** The follower's state in words: "catching up", "node unreachable". */
export const followerStateLabel = (state: Follower['state']) => STATE_LABELS[state];

/** Whether the follower is doing its job: a stuck, stopped or absent one is never shown as healthy. */
export const followerHealthy = (state: Follower['state']) => state === 'following' || state === 'catchingUp';

/** Where the follower's node is, and how it asks for internal transactions: "configured URL, trace_block". */
export function followerNode({ rpc, traceMethod }: Follower): string {
  const source = rpc === 'configured' ? 'configured URL' : rpc === 'public' ? 'public endpoint' : undefined;
  const traces = traceMethod === undefined ? undefined : traceMethod === 'off' ? 'no traces' : traceMethod;
  return [source, traces].filter(Boolean).join(', ') || '—';
}

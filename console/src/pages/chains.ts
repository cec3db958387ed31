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

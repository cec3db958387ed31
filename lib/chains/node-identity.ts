/**
 * Whether a chain's node is that chain: a URL of another chain's node (a copy-paste, a testnet's
 * URL for its mainnet) would be followed silently, its blocks notified as the configured chain's.
 */

/** The node answers `eth_chainId` with another chain than the one configured: nothing of it is followed. */
export class WrongChainError extends Error {
  override readonly name = 'WrongChainError';
  /** What faultKind (faults.ts) and GET /v1/chains say of it. */
  readonly kindOfFault: string;

  constructor(
    /** The chain the node says it is, in decimal. */
    readonly answered: string,
    readonly configured: string,
  ) {
    super(`the node answers chain ${answered}, configured ${configured}`);
    this.kindOfFault = `wrong chain: node answers chain ${answered}, configured ${configured}`;
  }
}

/** What of the node the check needs: one JSON-RPC call. */
export interface NodeRequests {
  request<T>(method: string, params: unknown[]): Promise<T>;
}

/**
 * Asks the node its chain id: resolves when it is `chainId`, throws WrongChainError when it is
 * another, and the request's error when the node does not answer (asked again later).
 */
export async function checkNodeChain(node: NodeRequests, chainId: string): Promise<void> {
  const answer = await node.request<string>('eth_chainId', []);
  let answered: string;
  try {
    answered = BigInt(answer).toString();
  } catch {
    answered = `'${String(answer).slice(0, 20)}'`;
  }
  if (answered !== chainId) throw new WrongChainError(answered, chainId);
}

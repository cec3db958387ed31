/**
 * A block as the node returns it over JSON-RPC: quantities are hex strings, addresses as the node
 * spells them (checksummed or not). The follower keeps these raw shapes, so that a notification
 * carries addresses exactly as the chain gave them.
 */
export type Hex = `0x${string}`;

export interface RpcTransaction {
  hash: Hex;
  blockHash: Hex;
  blockNumber: Hex;
  transactionIndex: Hex;
  from: Hex;
  /** null for a contract creation. */
  to: Hex | null;
  value: Hex;
  input: Hex;
  nonce: Hex;
  /** Absent on some nodes' legacy transactions. */
  type?: Hex;
  gas: Hex;
  gasPrice?: Hex;
  maxFeePerGas?: Hex;
  maxPriorityFeePerGas?: Hex;
  chainId?: Hex;
  accessList?: { address: Hex; storageKeys: Hex[] }[];
}

export interface RpcBlock {
  hash: Hex;
  parentHash: Hex;
  number: Hex;
  timestamp: Hex;
  receiptsRoot: Hex;
  transactions: RpcTransaction[];
}

export interface RpcLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  logIndex: Hex;
  transactionIndex: Hex;
  transactionHash: Hex;
  blockHash: Hex;
  removed?: boolean;
}

export interface RpcReceipt {
  transactionHash: Hex;
  transactionIndex: Hex;
  blockHash: Hex;
  status?: Hex;
  cumulativeGasUsed: Hex;
  gasUsed: Hex;
  effectiveGasPrice?: Hex;
  contractAddress?: Hex | null;
  logs: RpcLog[];
}

/** One frame of `debug_traceBlockByHash` with the callTracer: the transaction's call, and the calls it made. */
export interface CallFrame {
  type: string;
  from: Hex;
  to?: Hex;
  value?: Hex;
  gas?: Hex;
  gasUsed?: Hex;
  error?: string;
  calls?: CallFrame[];
}

/** Everything the matcher and the payload builder need of one block, fetched by its hash. */
export interface BlockData {
  block: RpcBlock;
  /** In transaction order, one per transaction. */
  receipts: RpcReceipt[];
  /**
   * In transaction order, one per transaction; absent when the chain serves no traces; `null` for a
   * transaction the node could not trace, notified without its internal transactions.
   */
  traces?: (CallFrame | null)[];
}

/**
 * The `address_activity` event of one transaction, built from the block as the node returned it:
 * quantities as decimal strings (numbers where the hosted API has numbers), the transaction's
 * addresses as the node spells them, token transfers decoded from its logs.
 */
import { decodeAbiParameters, formatUnits, getAddress, type Hex } from 'viem';
import type { NetworkToken } from '../config/chains';
import type { ActivityLog, AddressActivityEvent, AddressActivityTransaction, ErcTransfer, InternalTransaction } from '../schemas/notification';
import type { TokenMetadata } from '../store/chains';
import type { BlockData, CallFrame, RpcLog, RpcReceipt } from './rpc-types';

/** keccak256 of the event signatures. */
export const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
export const TRANSFER_SINGLE_TOPIC = '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62';
export const TRANSFER_BATCH_TOPIC = '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb';

export type TokenMetadataLookup = (address: string) => TokenMetadata;

export interface DecodedTransfer {
  kind: 'ERC20' | 'ERC721' | 'ERC1155';
  token: string;
  from: string;
  to: string;
  value: bigint;
  tokenId?: bigint;
  /** The log's place among the transaction's logs (the hosted API's `logIndex` of a transfer), not the block's. */
  logIndex: number;
  topic0: string;
}

const topicAddress = (topic: Hex) => getAddress(`0x${topic.slice(-40)}`);

/**
 * The token transfers in a receipt's logs: ERC-20 `Transfer` (3 topics, the value in data), ERC-721
 * `Transfer` (4 topics, the token id indexed), ERC-1155 `TransferSingle` and `TransferBatch` (one
 * transfer per id). A log that does not decode as its standard says is not a transfer.
 */
export function decodeTransfers(receipt: RpcReceipt): DecodedTransfer[] {
  const transfers: DecodedTransfer[] = [];
  for (const [index, log] of receipt.logs.entries()) {
    try {
      transfers.push(...transfersOf(log, index));
    } catch {
      // Malformed for its standard: an ordinary log.
    }
  }
  return transfers;
}

function transfersOf(log: RpcLog, logIndex: number): DecodedTransfer[] {
  const [topic0, ...indexed] = log.topics.map((topic) => topic.toLowerCase() as Hex);
  const base = { token: log.address, logIndex, topic0: topic0! };
  if (topic0 === TRANSFER_TOPIC && indexed.length === 2 && log.data.length === 66) {
    return [{ ...base, kind: 'ERC20', from: topicAddress(indexed[0]!), to: topicAddress(indexed[1]!), value: BigInt(log.data) }];
  }
  if (topic0 === TRANSFER_TOPIC && indexed.length === 3 && log.data === '0x') {
    return [{ ...base, kind: 'ERC721', from: topicAddress(indexed[0]!), to: topicAddress(indexed[1]!), value: 1n, tokenId: BigInt(indexed[2]!) }];
  }
  if (topic0 === TRANSFER_SINGLE_TOPIC && indexed.length === 3) {
    const [id, value] = decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], log.data);
    return [{ ...base, kind: 'ERC1155', from: topicAddress(indexed[1]!), to: topicAddress(indexed[2]!), value, tokenId: id }];
  }
  if (topic0 === TRANSFER_BATCH_TOPIC && indexed.length === 3) {
    const [ids, values] = decodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], log.data);
    if (ids.length !== values.length) return [];
    const [from, to] = [topicAddress(indexed[1]!), topicAddress(indexed[2]!)];
    return ids.map((id, index) => ({ ...base, kind: 'ERC1155' as const, from, to, value: values[index]!, tokenId: id }));
  }
  return [];
}

/** The token contracts whose metadata the transaction's event needs. */
export function tokenAddressesOf(data: BlockData, transactionIndex: number): string[] {
  return [...new Set(decodeTransfers(data.receipts[transactionIndex]!).map((transfer) => transfer.token))];
}

export interface AddressActivityInput {
  chainId: string;
  data: BlockData;
  transactionIndex: number;
  tokens: TokenMetadataLookup;
  networkToken: NetworkToken;
  includeLogs: boolean;
  includeInternalTxs: boolean;
}

const decimal = (hex: Hex | undefined | null) => (hex ? BigInt(hex).toString() : '0');

export function buildAddressActivityEvent(input: AddressActivityInput): AddressActivityEvent {
  const { data, transactionIndex: index } = input;
  const { block } = data;
  const tx = block.transactions[index]!;
  const receipt = data.receipts[index]!;
  const blockTimestamp = Number(block.timestamp);
  const gasPrice = receipt.effectiveGasPrice ?? tx.gasPrice;
  const transfers = decodeTransfers(receipt).map((transfer) => ercTransfer(transfer, tx.hash, blockTimestamp, input.tokens));
  const transaction: AddressActivityTransaction = {
    blockHash: block.hash,
    blockNumber: decimal(block.number),
    blockTimestamp,
    transactionIndex: Number(tx.transactionIndex),
    txHash: tx.hash,
    txStatus: receipt.status === '0x0' ? '0' : '1',
    from: tx.from,
    to: tx.to ?? receipt.contractAddress ?? '',
    value: decimal(tx.value),
    input: tx.input,
    nonce: decimal(tx.nonce),
    type: Number(tx.type ?? '0x0'),
    gas: decimal(tx.gas),
    gasPrice: decimal(tx.gasPrice ?? gasPrice),
    maxFeePerGas: decimal(tx.maxFeePerGas ?? tx.gasPrice),
    maxPriorityFeePerGas: decimal(tx.maxPriorityFeePerGas ?? tx.gasPrice),
    chainId: input.chainId,
    receiptCumulativeGasUsed: decimal(receipt.cumulativeGasUsed),
    receiptGasUsed: decimal(receipt.gasUsed),
    receiptEffectiveGasPrice: decimal(gasPrice),
    receiptRoot: block.receiptsRoot,
    ...(tx.to === null && receipt.contractAddress ? { contractAddress: receipt.contractAddress } : {}),
    erc20Transfers: transfers.filter((transfer) => transfer.type === 'ERC20'),
    erc721Transfers: transfers.filter((transfer) => transfer.type === 'ERC721'),
    erc1155Transfers: transfers.filter((transfer) => transfer.type === 'ERC1155'),
    ...(input.includeInternalTxs ? { internalTransactions: internalTransactionsOf(data.traces?.[index] ?? undefined, tx.hash) } : {}),
    networkToken: {
      tokenName: input.networkToken.name,
      tokenSymbol: input.networkToken.symbol,
      tokenDecimals: input.networkToken.decimals,
      valueWithDecimals: formatUnits(BigInt(tx.value), input.networkToken.decimals),
    },
    ...(tx.accessList?.length
      ? { accessList: tx.accessList.map((entry) => ({ accessAddresses: entry.address, storageKeys: entry.storageKeys })) }
      : {}),
  };
  // A transaction the node could not trace: its internal transactions are unknown, at least its own call.
  const untraced = input.includeInternalTxs && data.traces?.[index] === null;
  return {
    transaction,
    ...(input.includeLogs ? { logs: receipt.logs.map(activityLog) } : {}),
    ...(untraced ? { omitted: { internalTransactions: 1 } } : {}),
  };
}

function ercTransfer(transfer: DecodedTransfer, transactionHash: string, blockTimestamp: number, tokens: TokenMetadataLookup): ErcTransfer {
  const metadata = tokens(transfer.token);
  const token = {
    address: getAddress(transfer.token),
    name: metadata.name,
    symbol: metadata.symbol,
    decimals: metadata.decimals,
    valueWithDecimals: transfer.kind === 'ERC721' ? '1' : formatUnits(transfer.value, metadata.decimals),
  };
  const tokenKey = ({ ERC20: 'erc20Token', ERC721: 'erc721Token', ERC1155: 'erc1155Token' } as const)[transfer.kind];
  return {
    transactionHash,
    type: transfer.kind,
    from: transfer.from,
    to: transfer.to,
    value: transfer.value.toString(),
    blockTimestamp,
    logIndex: transfer.logIndex,
    ...(transfer.tokenId !== undefined ? { tokenId: transfer.tokenId.toString() } : {}),
    [tokenKey]: token,
  };
}

/** The call tree depth first, the transaction's own call included, addresses checksummed (as the hosted API lists them). */
function internalTransactionsOf(trace: CallFrame | undefined, transactionHash: string): InternalTransaction[] {
  const calls: InternalTransaction[] = [];
  const visit = (frame: CallFrame) => {
    calls.push({
      from: getAddress(frame.from),
      to: frame.to ? getAddress(frame.to) : '',
      internalTxType: frame.type,
      value: decimal(frame.value),
      gasUsed: decimal(frame.gasUsed),
      gasLimit: decimal(frame.gas),
      transactionHash,
    });
    for (const call of frame.calls ?? []) visit(call);
  };
  if (trace) visit(trace);
  return calls;
}

function activityLog(log: RpcLog): ActivityLog {
  const topics = Object.fromEntries(log.topics.slice(0, 4).map((topic, index) => [`topic${index}`, topic]));
  return {
    address: log.address,
    topic0: log.topics[0] ?? '',
    ...topics,
    data: log.data,
    transactionIndex: Number(log.transactionIndex),
    logIndex: Number(log.logIndex),
    removed: log.removed ?? false,
  };
}

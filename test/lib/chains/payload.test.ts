import { encodeAbiParameters, pad, type Hex } from 'viem';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildAddressActivityEvent, decodeTransfers, TRANSFER_BATCH_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_TOPIC } from '../../../lib/chains/payload';
import type { BlockData, RpcLog, RpcReceipt } from '../../../lib/chains/rpc-types';
import { addressActivityEvent, addressActivityNotification } from '../../../lib/schemas/notification';

const hosted = JSON.parse(readFileSync(path.join(__dirname, '../../fixtures/hosted-address-activity-example.json'), 'utf8'));
const hex = (value: number | bigint | string) => `0x${BigInt(value).toString(16)}` as Hex;
const AVAX = { name: 'Avalanche', symbol: 'AVAX', decimals: 18 };
const USDT = { name: 'TetherToken', symbol: 'USDt', decimals: 6 };

/** The hosted example's transaction as the node returns it (its decimal fields back to hex). */
function hostedExampleBlock(): BlockData {
  const t = hosted.event.transaction;
  const log = hosted.event.logs[0];
  return {
    block: {
      hash: t.blockHash,
      parentHash: `0x${'00'.repeat(32)}`,
      number: hex(t.blockNumber),
      timestamp: hex(t.blockTimestamp),
      receiptsRoot: t.receiptRoot,
      transactions: [
        {
          hash: t.txHash,
          blockHash: t.blockHash,
          blockNumber: hex(t.blockNumber),
          transactionIndex: hex(t.transactionIndex),
          from: t.from,
          to: t.to,
          value: hex(t.value),
          input: t.input,
          nonce: hex(t.nonce),
          type: hex(t.type),
          gas: hex(t.gas),
          gasPrice: hex(t.gasPrice),
          maxFeePerGas: hex(t.maxFeePerGas),
          maxPriorityFeePerGas: hex(t.maxPriorityFeePerGas),
        },
      ],
    },
    receipts: [
      {
        transactionHash: t.txHash,
        transactionIndex: hex(t.transactionIndex),
        blockHash: t.blockHash,
        status: '0x1',
        cumulativeGasUsed: hex(t.receiptCumulativeGasUsed),
        gasUsed: hex(t.receiptGasUsed),
        effectiveGasPrice: hex(t.receiptEffectiveGasPrice),
        contractAddress: null,
        logs: [
          {
            address: log.address,
            topics: [log.topic0, log.topic1, log.topic2],
            data: log.data,
            logIndex: hex(log.logIndex),
            transactionIndex: hex(log.transactionIndex),
            transactionHash: t.txHash,
            blockHash: t.blockHash,
            removed: false,
          },
        ],
      },
    ],
    traces: [
      {
        type: 'CALL',
        from: t.from,
        to: t.to,
        value: '0x0',
        gas: hex(80000),
        gasUsed: hex(44038),
        calls: [{ type: 'DELEGATECALL', from: '0x9702230A8Ea53601f5cD2dc00fDBc13d4dF4A8c7', to: '0xBA2a995Bd4ab9e605454cCEf88169352cd5F75A6', gas: hex(50301), gasUsed: hex(15096) }],
      },
    ],
  };
}

const build = (data: BlockData, options: { includeLogs?: boolean; includeInternalTxs?: boolean } = {}) =>
  buildAddressActivityEvent({
    chainId: '43114',
    data,
    transactionIndex: 0,
    tokens: () => USDT,
    networkToken: AVAX,
    includeLogs: options.includeLogs ?? true,
    includeInternalTxs: options.includeInternalTxs ?? true,
  });

describe('the address_activity payload', () => {
  test("the hosted API's example parses with the schema the service builds with", () => {
    expect(addressActivityNotification.safeParse(hosted).success).toBe(true);
  });

  test("rebuilt from the node's view of the hosted example's transaction, it equals the example field by field (no null topic)", () => {
    const event = build(hostedExampleBlock());
    const { topic3: _, ...log } = hosted.event.logs[0];
    const { networkToken, ...transaction } = event.transaction;
    expect(transaction).toEqual(hosted.event.transaction);
    expect(networkToken).toEqual({ tokenName: 'Avalanche', tokenSymbol: 'AVAX', tokenDecimals: 18, valueWithDecimals: '0' });
    expect(event.logs).toEqual([log]);
    expect(addressActivityEvent.parse(event)).toEqual(event);
  });

  test('without includeLogs and includeInternalTxs, logs and internalTransactions are absent', () => {
    const event = build(hostedExampleBlock(), { includeLogs: false, includeInternalTxs: false });
    expect('logs' in event).toBe(false);
    expect('internalTransactions' in event.transaction).toBe(false);
    expect(event.transaction.erc20Transfers).toHaveLength(1);
  });

  test('a contract creation names the created contract as to and contractAddress', () => {
    const data = hostedExampleBlock();
    const created = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
    data.block.transactions[0]!.to = null;
    data.receipts[0]!.contractAddress = created;
    const event = build(data);
    expect(event.transaction).toMatchObject({ to: created, contractAddress: created });
  });

  test('a legacy transaction reports its gas price as both EIP-1559 fees; a reverted one has txStatus "0"', () => {
    const data = hostedExampleBlock();
    const tx = data.block.transactions[0]!;
    Object.assign(tx, { type: '0x0', gasPrice: hex(30e9), maxFeePerGas: undefined, maxPriorityFeePerGas: undefined });
    data.receipts[0]!.status = '0x0';
    const { transaction } = build(data);
    expect(transaction).toMatchObject({ type: 0, gasPrice: '30000000000', maxFeePerGas: '30000000000', maxPriorityFeePerGas: '30000000000', txStatus: '0' });
  });
});

describe('token transfers decoded from logs', () => {
  const from = '0x1111111111111111111111111111111111111111';
  const to = '0x2222222222222222222222222222222222222222';
  const operator = '0x3333333333333333333333333333333333333333';
  const token = '0x4444444444444444444444444444444444444444';
  const receipt = (logs: Omit<RpcLog, 'transactionIndex' | 'transactionHash' | 'blockHash' | 'address'>[]): RpcReceipt => ({
    transactionHash: `0x${'ab'.repeat(32)}`,
    transactionIndex: '0x0',
    blockHash: `0x${'cd'.repeat(32)}`,
    cumulativeGasUsed: '0x0',
    gasUsed: '0x0',
    logs: logs.map((log) => ({ ...log, address: token, transactionIndex: '0x0', transactionHash: `0x${'ab'.repeat(32)}`, blockHash: `0x${'cd'.repeat(32)}` })),
  });
  const topic = (address: string) => pad(address as Hex);

  test('ERC-721 Transfer: the token id is the third indexed topic, the value 1', () => {
    const [transfer] = decodeTransfers(receipt([{ topics: [TRANSFER_TOPIC, topic(from), topic(to), hex(77)], data: '0x', logIndex: '0x3' }]));
    expect(transfer).toMatchObject({ kind: "ERC721", tokenId: 77n, value: 1n, logIndex: 0 });
    expect(transfer!.from.toLowerCase()).toBe(from);
  });

  test('ERC-1155 TransferSingle and TransferBatch: one transfer per id', () => {
    const single = encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [5n, 10n]);
    const batch = encodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], [[1n, 2n], [3n, 4n]]);
    const transfers = decodeTransfers(
      receipt([
        { topics: [TRANSFER_SINGLE_TOPIC, topic(operator), topic(from), topic(to)], data: single, logIndex: '0x0' },
        { topics: [TRANSFER_BATCH_TOPIC, topic(operator), topic(from), topic(to)], data: batch, logIndex: '0x1' },
      ]),
    );
    expect(transfers.map(({ kind, tokenId, value, logIndex }) => ({ kind, tokenId, value, logIndex }))).toEqual([
      { kind: 'ERC1155', tokenId: 5n, value: 10n, logIndex: 0 },
      { kind: 'ERC1155', tokenId: 1n, value: 3n, logIndex: 1 },
      { kind: 'ERC1155', tokenId: 2n, value: 4n, logIndex: 1 },
    ]);
  });

  test('a Transfer log that fits neither standard, or undecodable data, is no transfer', () => {
    expect(
      decodeTransfers(
        receipt([
          { topics: [TRANSFER_TOPIC, topic(from)], data: '0x', logIndex: '0x0' },
          { topics: [TRANSFER_BATCH_TOPIC, topic(operator), topic(from), topic(to)], data: '0x1234', logIndex: '0x1' },
        ]),
      ),
    ).toEqual([]);
  });
});

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { keccak256, recoverTransactionAddress, serializeTransaction, toRlp, type Hex } from 'viem';
import { buildAddressActivityEvent } from '../../../lib/chains/payload';
import type { BlockData } from '../../../lib/chains/rpc-types';
import { KNOWN_CHAINS } from '../../../lib/config/chains';
import { addressActivityEvent } from '../../../lib/schemas/notification';

/**
 * A real Avalanche C-Chain block from public data (test/fixtures/c-chain-block-10.json), checked
 * against the chain's own commitments before the payload builder gets it: the header hashes to the
 * block hash, the signed transaction to its hash and to the transactions root, and the one receipt
 * the block implies to the receipts root. So every value below is the chain's, not ours.
 */
const recorded = JSON.parse(readFileSync(path.join(__dirname, '../../fixtures/c-chain-block-10.json'), 'utf8'));
const header = recorded.header as Record<string, Hex>;
const tx = recorded.transactions[0] as Record<string, Hex>;

/** An RLP integer: minimal big-endian bytes, none for zero. */
const rlpInteger = (quantity: Hex): Hex => {
  const digits = BigInt(quantity).toString(16);
  return digits === '0' ? '0x' : `0x${digits.length % 2 ? '0' : ''}${digits}`;
};
/** The root of a Merkle Patricia trie holding one value under the key rlp(0): a single leaf node. */
const singleEntryTrieRoot = (value: Hex) => keccak256(toRlp(['0x2080', value]));

const serializedTransaction = serializeTransaction(
  { type: 'legacy', chainId: 43114, nonce: Number(tx.nonce), gasPrice: BigInt(tx.gasPrice!), gas: BigInt(tx.gas!), to: tx.to!, value: BigInt(tx.value!), data: tx.input! },
  { r: tx.r!, s: tx.s!, v: BigInt(tx.v!) },
);
// The block's only transaction used all of the block's gas, so its receipt is: status 1, cumulative gas = gas used, no logs.
const receiptRlp = toRlp(['0x01', rlpInteger(header.gasUsed!), header.logsBloom!, []]);

describe('a recorded C-Chain block (43114, block 10) through the payload builder', () => {
  it('is the chain’s: header, transaction and receipt match the block hash and its roots', () => {
    // Coreth's header before Apricot phase 3: Ethereum's fields plus extDataHash.
    const headerFields = [
      header.parentHash, header.sha3Uncles, header.miner, header.stateRoot, header.transactionsRoot, header.receiptsRoot, header.logsBloom,
      rlpInteger(header.difficulty!), rlpInteger(header.number!), rlpInteger(header.gasLimit!), rlpInteger(header.gasUsed!),
      rlpInteger(header.timestamp!), header.extraData, header.mixHash, header.nonce, header.extDataHash,
    ] as Hex[];
    expect(keccak256(toRlp(headerFields))).toBe(header.hash);
    expect(keccak256(serializedTransaction)).toBe(tx.hash);
    expect(singleEntryTrieRoot(serializedTransaction)).toBe(header.transactionsRoot);
    expect(singleEntryTrieRoot(receiptRlp)).toBe(header.receiptsRoot);
  });

  it('becomes the hosted payload, field by field', async () => {
    const from = await recoverTransactionAddress({ serializedTransaction: serializedTransaction as Parameters<typeof recoverTransactionAddress>[0]['serializedTransaction'] });
    const data: BlockData = {
      block: {
        hash: header.hash!,
        parentHash: header.parentHash!,
        number: header.number!,
        timestamp: header.timestamp!,
        receiptsRoot: header.receiptsRoot!,
        transactions: [
          {
            hash: tx.hash!, blockHash: header.hash!, blockNumber: header.number!, transactionIndex: '0x0', from, to: tx.to!,
            value: tx.value!, input: tx.input!, nonce: tx.nonce!, type: '0x0', gas: tx.gas!, gasPrice: tx.gasPrice!, chainId: '0xa86a',
          },
        ],
      },
      receipts: [
        { transactionHash: tx.hash!, transactionIndex: '0x0', blockHash: header.hash!, status: '0x1', cumulativeGasUsed: header.gasUsed!, gasUsed: header.gasUsed!, effectiveGasPrice: tx.gasPrice!, contractAddress: null, logs: [] },
      ],
    };
    const event = buildAddressActivityEvent({
      chainId: '43114',
      data,
      transactionIndex: 0,
      tokens: () => {
        throw new Error('the block has no token transfers');
      },
      networkToken: KNOWN_CHAINS['43114']!.networkToken,
      includeLogs: true,
      // The source has no traces of the block.
      includeInternalTxs: false,
    });

    expect(addressActivityEvent.parse(event)).toEqual(event);
    expect(event.transaction).toEqual({
      blockHash: '0x0af6d14cf36b0d52e0b49747460859804fcd7a6f8518fe374fba05c96c27d35a',
      blockNumber: '10',
      blockTimestamp: 1601043242,
      transactionIndex: 0,
      txHash: '0xe91eeb7aca41cb41b6d32ffd841eee3a297ab9318e7467961ed43b5e0ee3e58e',
      txStatus: '1',
      from: '0x967d458697Fb512394740A37d39C3A1ca90b1a30',
      to: '0x0c498d075ae2236cfd13800abc61caf04b8fad63',
      value: '1000000000000000',
      input: '0x',
      nonce: '2',
      type: 0,
      gas: '21000',
      gasPrice: '470000000000',
      maxFeePerGas: '470000000000',
      maxPriorityFeePerGas: '470000000000',
      chainId: '43114',
      receiptCumulativeGasUsed: '21000',
      receiptGasUsed: '21000',
      receiptEffectiveGasPrice: '470000000000',
      receiptRoot: '0x056b23fbba480696b65fe5a59b8f2148a1299103c4f57df839233af2cf4ca2d2',
      erc20Transfers: [],
      erc721Transfers: [],
      erc1155Transfers: [],
      networkToken: { tokenName: 'Avalanche', tokenSymbol: 'AVAX', tokenDecimals: 18, valueWithDecimals: '0.001' },
    });
    expect(event.logs).toEqual([]);
  });
});

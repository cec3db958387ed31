/**
 * The `address_activity` notification as receivers get it: the hosted API's body
 * (`../shared/spec/delivery.md`). The payload builder's types come from here, and tests parse
 * every notification they receive, and the hosted API's own example, with it.
 */
import * as z from './zod';

const decimal = z.string().regex(/^\d+$/).describe('A decimal integer in a string');
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);

const token = z.strictObject({
  address: z.string(),
  name: z.string(),
  symbol: z.string(),
  decimals: z.number().int(),
  valueWithDecimals: z.string().describe('value / 10^decimals, in decimal notation'),
});

export const ercTransfer = z.strictObject({
  transactionHash: z.string(),
  type: z.enum(['ERC20', 'ERC721', 'ERC1155']),
  from: z.string(),
  to: z.string(),
  value: decimal,
  blockTimestamp: z.number().int(),
  logIndex: z.number().int(),
  tokenId: decimal.optional(),
  erc20Token: token.optional(),
  erc721Token: token.optional(),
  erc1155Token: token.optional(),
});
export type ErcTransfer = z.infer<typeof ercTransfer>;

export const internalTransaction = z.strictObject({
  from: z.string(),
  to: z.string(),
  internalTxType: z.string().describe('The call frame type: CALL, DELEGATECALL, STATICCALL, CREATE, CREATE2, ...'),
  value: decimal,
  gasUsed: decimal,
  gasLimit: decimal,
  transactionHash: z.string(),
});
export type InternalTransaction = z.infer<typeof internalTransaction>;

export const addressActivityTransaction = z.strictObject({
  blockHash: z.string(),
  blockNumber: decimal,
  blockTimestamp: z.number().int().describe('Unix seconds'),
  transactionIndex: z.number().int(),
  txHash: z.string(),
  txStatus: z.enum(['0', '1']).describe('"1" success, "0" reverted'),
  from: z.string(),
  to: z.string().describe('The recipient; for a contract creation, the created contract'),
  value: decimal.describe('Wei'),
  input: hex,
  nonce: decimal,
  type: z.number().int(),
  gas: decimal,
  gasPrice: decimal,
  maxFeePerGas: decimal,
  maxPriorityFeePerGas: decimal,
  chainId: decimal,
  receiptCumulativeGasUsed: decimal,
  receiptGasUsed: decimal,
  receiptEffectiveGasPrice: decimal,
  receiptRoot: z.string().describe("The block's receipts root"),
  contractAddress: z.string().optional().describe('The created contract, for a contract creation'),
  erc20Transfers: z.array(ercTransfer),
  erc721Transfers: z.array(ercTransfer),
  erc1155Transfers: z.array(ercTransfer),
  internalTransactions: z.array(internalTransaction).optional().describe('Only when the webhook has includeInternalTxs'),
  networkToken: z
    .strictObject({
      tokenName: z.string().optional(),
      tokenSymbol: z.string().optional(),
      tokenDecimals: z.number().int().optional(),
      valueWithDecimals: z.string().optional(),
    })
    .optional(),
  accessList: z.array(z.strictObject({ accessAddresses: z.string(), storageKeys: z.array(z.string()) })).optional(),
});
export type AddressActivityTransaction = z.infer<typeof addressActivityTransaction>;

/** The hosted API's examples show `null` for an unused topic; its SDK's schema rejects it, so we leave the key out. */
const topic = z.string().nullable().optional();

export const activityLog = z.strictObject({
  address: z.string(),
  topic0: z.string(),
  topic1: topic,
  topic2: topic,
  topic3: topic,
  data: hex,
  transactionIndex: z.number().int(),
  logIndex: z.number().int(),
  removed: z.boolean(),
});
export type ActivityLog = z.infer<typeof activityLog>;

const count = z.number().int().min(1);

/** Not in the hosted API: what a notification too large to store whole, or of a transaction the node could not trace, left out (docs/chain-follower.md). */
export const omittedParts = z.strictObject({
  logs: count.optional(),
  erc20Transfers: count.optional(),
  erc721Transfers: count.optional(),
  erc1155Transfers: count.optional(),
  internalTransactions: count
    .optional()
    .describe('1 also when the node could not trace the transaction: its internal transactions are unknown, `internalTransactions` is []'),
  accessList: count.optional(),
  inputBytes: count.optional().describe('The bytes of the transaction input left out; `input` is then "0x"'),
});
export type OmittedParts = z.infer<typeof omittedParts>;

export const addressActivityEvent = z.strictObject({
  transaction: addressActivityTransaction,
  logs: z.array(activityLog).optional().describe('Only when the webhook has includeLogs'),
  omitted: omittedParts
    .optional()
    .describe(
      'Not in the hosted API; only on a notification too large to store whole: how many of each list were left out, ' +
        'the last logs first, then every list and the input; or on a transaction the node could not trace. Absent: nothing was left out',
    ),
});
export type AddressActivityEvent = z.infer<typeof addressActivityEvent>;

export const addressActivityNotification = z.strictObject({
  webhookId: z.string(),
  eventType: z.literal('address_activity'),
  messageId: z.string().describe('The same on every attempt: de-duplicate on it'),
  event: addressActivityEvent,
});
export type AddressActivityNotification = z.infer<typeof addressActivityNotification>;

import * as z from './zod';
import { expected, nextPageToken, pageSize, pageToken, webhookId } from './fields';

const blockNumberMessage = 'must be a block number (a whole number from 0)';
const blockNumber = z
  .number({ error: expected(blockNumberMessage) })
  .int({ error: blockNumberMessage, abort: true })
  .min(0, { error: blockNumberMessage, abort: true })
  .max(Number.MAX_SAFE_INTEGER, { error: blockNumberMessage, abort: true });

export const createBackfillBody = z.strictObject({
  fromBlock: blockNumber.describe('The first block whose notifications are recorded'),
  toBlock: blockNumber
    .optional()
    .describe("The last block; at most the chain's checkpoint (GET /v1/chains), which is the default: the live follower notifies the blocks after it"),
});
export type CreateBackfillInput = z.infer<typeof createBackfillBody>;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const backfillPath = z.strictObject({
  id: webhookId,
  backfillId: z
    .string({ error: expected('must be a string') })
    .regex(UUID, { error: 'must be a backfill id (a UUID)' })
    .transform((id) => id.toLowerCase()),
});

export const listBackfillsQuery = z.strictObject({ pageToken, pageSize });
export type ListBackfillsQuery = z.infer<typeof listBackfillsQuery>;

export const backfillStatus = z
  .enum(['running', 'completed', 'cancelled', 'failed'])
  .describe('running: blocks are being read; completed: every block of the range was; cancelled: stopped by a DELETE; failed: stopped, see `reason`');

/** A backfill: a webhook's notifications of past blocks, recorded and sent as the live ones are. Times are milliseconds since the epoch. */
export const backfill = z.object({
  backfillId: z.string(),
  webhookId: z.string(),
  chainId: z.string(),
  status: backfillStatus,
  fromBlock: z.number().int(),
  toBlock: z.number().int(),
  nextBlock: z.number().int().describe('The first block not yet read: toBlock + 1 once completed'),
  notifications: z
    .number()
    .int()
    .describe('Notifications recorded by this backfill; one the live follower or an earlier backfill recorded is not recorded again, nor counted'),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
  endedAt: z.number().int().optional(),
  reason: z.string().optional().describe('When failed: why (the node no longer has a block, the webhook was deactivated); when cancelled: that it was'),
});
export type Backfill = z.infer<typeof backfill>;

export const backfillList = z.object({ backfills: z.array(backfill), nextPageToken });
export type BackfillList = z.infer<typeof backfillList>;

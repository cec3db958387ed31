import { randomBytes } from 'node:crypto';
import { BatchWriteItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { startDynamoDbProcess } from '../../infra/local/dynamodb-process';
import { ensureTable } from '../../infra/local/embedded-dynamodb';
import type { WebhookStatus } from '../../lib/schemas/fields';
import type { Webhook } from '../../lib/schemas/webhook';
import { dynamoDb, tableName } from '../../lib/store/client';
import { webhookItem } from '../../lib/store/webhooks';

export const BENCH_TABLE = 'webhooks-bench';

/**
 * The embedded DynamoDB server in its own process, as `npm start` runs it (in memory here), and this
 * process's configuration pointed at it (the table, a page-token key), so that servers under test
 * and the bench itself share it.
 */
export async function startBenchStore(): Promise<{ endpoint: string; env: Record<string, string>; pid: number; stop: () => Promise<unknown> }> {
  const dynamo = await startDynamoDbProcess({ port: 0 });
  const env = {
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    TABLE_NAME: BENCH_TABLE,
    PAGE_TOKEN_KEY: randomBytes(32).toString('hex'),
    POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'WARN',
  };
  Object.assign(process.env, env);
  delete process.env.DYNAMODB_PORT;
  await ensureTable(BENCH_TABLE);
  return { endpoint: env.DYNAMODB_ENDPOINT, env, pid: dynamo.pid, stop: () => dynamo.close() };
}

export function benchWebhook(status: WebhookStatus): Webhook {
  const id = uuidv7();
  return {
    id,
    url: 'https://receiver.example.com/hooks',
    chainId: '43114',
    status,
    createdAt: Math.floor(Date.now() / 1000),
    name: 'bench',
    description: '',
    eventType: 'address_activity',
    metadata: { eventSignatures: [], addresses: [`0x${randomBytes(20).toString('hex')}`] },
    includeInternalTxs: false,
    includeLogs: false,
  };
}

/** Writes `count` webhooks for the account with BatchWriteItem (25 a call, 8 calls in flight). */
export async function seedWebhooks(account: string, count: number, statusOf: (index: number) => WebhookStatus): Promise<void> {
  const items = Array.from({ length: count }, (_, index) => marshall(webhookItem(account, benchWebhook(statusOf(index)), 1)));
  let next = 0;
  const writer = async () => {
    while (next < items.length) {
      const batch = items.slice(next, next + 25);
      next += 25;
      let unprocessed: WriteRequest[] = batch.map((Item) => ({ PutRequest: { Item } }));
      while (unprocessed.length > 0) {
        const { UnprocessedItems } = await dynamoDb().send(new BatchWriteItemCommand({ RequestItems: { [tableName()]: unprocessed } }));
        unprocessed = UnprocessedItems?.[tableName()] ?? [];
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, writer));
}

/**
 * Counts the DynamoDB requests this process sends, and the items each Query reads (ScannedCount).
 * Installed before the process's first call: the client resolves its middleware stack once per
 * command class, so a command already called would not pass through the counter.
 */
export function instrumentDynamoDb() {
  const calls: { command: string; scannedCount?: number }[] = [];
  dynamoDb().middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const output = result.output as { ScannedCount?: number };
      calls.push({ command: context.commandName ?? 'unknown', scannedCount: output.ScannedCount });
      return result;
    },
    { step: 'initialize', name: 'benchCallCounter' },
  );
  return {
    calls,
    reset: () => void calls.splice(0, calls.length),
  };
}

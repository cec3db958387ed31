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
import { uuidv7Time } from '../../lib/uuid';

export const BENCH_TABLE = 'webhooks-bench';

/**
 * The embedded DynamoDB server in its own process, as `npm start` runs it (in memory here), and this
 * process's configuration pointed at it (the table, a page-token key), so that servers under test
 * and the bench itself share it. `maxOldSpaceMiB` raises the store process's heap limit (V8's default
 * here is about 4 GiB): the addresses section fills it with some 6 million items.
 */
export async function startBenchStore(
  { maxOldSpaceMiB }: { maxOldSpaceMiB?: number } = {},
): Promise<{ endpoint: string; env: Record<string, string>; pid: number; stop: () => Promise<unknown> }> {
  // The store process is forked with this process's environment: NODE_OPTIONS reaches it, and only it.
  const nodeOptions = process.env.NODE_OPTIONS;
  if (maxOldSpaceMiB) process.env.NODE_OPTIONS = `${nodeOptions ?? ''} --max-old-space-size=${maxOldSpaceMiB}`.trim();
  let dynamo: Awaited<ReturnType<typeof startDynamoDbProcess>>;
  try {
    dynamo = await startDynamoDbProcess({ port: 0 });
  } finally {
    if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = nodeOptions;
  }
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
    createdAt: uuidv7Time(id),
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

export interface DynamoDbCall {
  command: string;
  /** Items a Query read (ScannedCount). */
  scannedCount?: number;
  /** Items a BatchWriteItem puts or deletes, or keys a BatchGetItem asks for. */
  batchItems?: number;
}

export interface DynamoDbCounter {
  calls: DynamoDbCall[];
  reset: () => void;
  /** Stops recording (until the next `instrumentDynamoDb()`), so that later sections keep nothing. */
  stop: () => void;
}

let counter: (DynamoDbCounter & { recording: boolean }) | undefined;

/** Sees each request of this process's client, its input and its sending: the cost section's capacity meter. */
export type DynamoDbInterceptor = (command: string, input: Record<string, unknown>, send: () => Promise<{ output: unknown }>) => Promise<{ output: unknown }>;
let interceptor: DynamoDbInterceptor | undefined;

/** Until called again with undefined, every request of this process's client goes through `intercept` (installDynamoDbCounter must have run). */
export function interceptDynamoDb(intercept: DynamoDbInterceptor | undefined): void {
  interceptor = intercept;
}

/** Items in a BatchWriteItem's or keys in a BatchGetItem's input, over all its tables. */
function batchItemsOf(input: unknown): number | undefined {
  const requestItems = (input as { RequestItems?: Record<string, unknown[] | { Keys?: unknown[] }> }).RequestItems;
  if (!requestItems) return undefined;
  return Object.values(requestItems).reduce<number>((sum, entry) => sum + (Array.isArray(entry) ? entry.length : (entry.Keys?.length ?? 0)), 0);
}

/**
 * Counts the DynamoDB requests this process sends, the items each Query reads (ScannedCount) and the
 * items of each batch request. The middleware goes in once per process, before the process's first
 * call (bench/run.ts installs it before any section runs): the client resolves its middleware stack
 * once per command class, so a command already called would not pass through it. It records only
 * between `instrumentDynamoDb()` and the counter's `stop()`.
 */
export function installDynamoDbCounter(): void {
  if (counter) return;
  const installed = {
    calls: [] as DynamoDbCall[],
    recording: false,
    reset: () => void installed.calls.splice(0, installed.calls.length),
    stop: () => {
      installed.recording = false;
      installed.reset();
    },
  };
  counter = installed;
  dynamoDb().middlewareStack.add(
    (next, context) => async (args) => {
      const result = interceptor
        ? ((await interceptor(context.commandName ?? 'unknown', args.input as Record<string, unknown>, () => next(args))) as Awaited<ReturnType<typeof next>>)
        : await next(args);
      if (!installed.recording) return result;
      const output = result.output as { ScannedCount?: number };
      installed.calls.push({ command: context.commandName ?? 'unknown', scannedCount: output.ScannedCount, batchItems: batchItemsOf(args.input) });
      return result;
    },
    { step: 'initialize', name: 'benchCallCounter' },
  );
}

/** The process's counter (installed if it was not), emptied and recording. */
export function instrumentDynamoDb(): DynamoDbCounter {
  installDynamoDbCounter();
  counter!.reset();
  counter!.recording = true;
  return counter!;
}

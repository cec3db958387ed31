/**
 * Batch reads and writes of any number of items: split into DynamoDB's batch sizes, sent with
 * bounded parallelism, with what DynamoDB leaves unprocessed (throttling) sent again after a
 * growing pause. A store that keeps refusing ends in a 503.
 */
import { BatchGetItemCommand, BatchWriteItemCommand, type AttributeValue, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { ServiceUnavailable } from '../errors';
import { dynamoDb, tableName } from './client';
import type { Item } from './items';
import type { TableKey } from './table';

/** DynamoDB's limits for one BatchWriteItem and one BatchGetItem. */
const WRITE_BATCH = 25;
const GET_BATCH = 100;
/** Requests in flight at once for one call; the SDK's connection pool holds 50. */
const PARALLEL_REQUESTS = 8;
/** Rounds for what is left unprocessed: pauses of 50 ms doubling to 3.2 s, about 6 s in all. */
const MAX_ROUNDS = 8;

export type ItemWrite = { put: Item } | { delete: TableKey };

const toAttributes = (item: Item) => marshall(item, { removeUndefinedValues: true });

function writeRequest(write: ItemWrite): WriteRequest {
  return 'put' in write ? { PutRequest: { Item: toAttributes(write.put) } } : { DeleteRequest: { Key: toAttributes(write.delete) } };
}

/** Runs `task` on each chunk of `size` values, at most `concurrency` chunks at a time. */
export async function forEachChunk<T>(values: T[], size: number, concurrency: number, task: (chunk: T[]) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < values.length) {
      const start = next;
      next += size;
      await task(values.slice(start, start + size));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.ceil(values.length / size)) }, worker));
}

const pause = (round: number) => new Promise((resolve) => setTimeout(resolve, 25 * 2 ** round));

/** DynamoDB's limit for one BatchWriteItem: what `writeItems` sends in one request. */
export const WRITE_BATCH_SIZE = WRITE_BATCH;

/**
 * Puts and deletes, unconditionally; each is idempotent, so a retry after a crash redoes them. No
 * two writes may name the same key (DynamoDB refuses such a batch). `beforeRetry` runs once, before
 * anything DynamoDB left unprocessed is sent again. Returns the requests sent.
 */
export async function writeItems(writes: ItemWrite[], options: { beforeRetry?: () => Promise<void> } = {}): Promise<number> {
  const table = tableName();
  let requests = 0;
  let retrying: Promise<void> | undefined;
  await forEachChunk(writes, WRITE_BATCH, PARALLEL_REQUESTS, async (chunk) => {
    let pending = chunk.map(writeRequest);
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === MAX_ROUNDS) throw new ServiceUnavailable();
      if (round > 0) {
        retrying ??= options.beforeRetry?.() ?? Promise.resolve();
        await retrying;
        await pause(round);
      }
      requests += 1;
      const { UnprocessedItems } = await dynamoDb().send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      pending = UnprocessedItems?.[table] ?? [];
    }
  });
  return requests;
}

export interface ItemsRead {
  items: Item[];
  requests: number;
}

/**
 * The items that exist among `keys`, in no particular order: read strongly consistently, or, with
 * `eventuallyConsistent`, at half the read units and perhaps a moment old.
 */
export async function readItems(keys: TableKey[], projection?: string[], { eventuallyConsistent = false } = {}): Promise<ItemsRead> {
  const table = tableName();
  const items: Item[] = [];
  let requests = 0;
  const names = projection && Object.fromEntries(projection.map((name, index) => [`#p${index}`, name]));
  await forEachChunk(keys, GET_BATCH, PARALLEL_REQUESTS, async (chunk) => {
    let pending: Record<string, AttributeValue>[] = chunk.map((key) => toAttributes(key as unknown as Item));
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === MAX_ROUNDS) throw new ServiceUnavailable();
      if (round > 0) await pause(round);
      requests += 1;
      const { Responses, UnprocessedKeys } = await dynamoDb().send(
        new BatchGetItemCommand({
          RequestItems: {
            [table]: {
              Keys: pending,
              ConsistentRead: !eventuallyConsistent,
              ProjectionExpression: names && Object.keys(names).join(', '),
              ExpressionAttributeNames: names,
            },
          },
        }),
      );
      for (const item of Responses?.[table] ?? []) items.push(unmarshall(item));
      pending = UnprocessedKeys?.[table]?.Keys ?? [];
    }
  });
  return { items, requests };
}

/** One text per table key, to match the items a batch read returns (in no order) to the keys asked. */
export const keyText = (key: TableKey | Item) => `${key.pk}\n${key.sk}`;

/** Reads some items, returning those that exist among `keys`. */
export type ItemReader = (keys: TableKey[]) => Promise<Item[]>;

/** Eventually consistent reads, each call its own. */
export const readEventuallyConsistent: ItemReader = async (keys) => (await readItems(keys, undefined, { eventuallyConsistent: true })).items;

/**
 * Eventually consistent reads in which the calls made in one turn of the event loop go out
 * together, each distinct key read once: a batch of queue records asks for its account's items
 * (webhook, secret, endpoint health) once, not once per record. When the shared read fails, each
 * call is read on its own, so that one call's fault stays its own.
 */
export function coalescingReader(read: ItemReader = readEventuallyConsistent): ItemReader {
  let asked: Array<{ keys: TableKey[]; resolve: (items: Item[]) => void; reject: (error: unknown) => void }> = [];
  const flush = async () => {
    const calls = asked;
    asked = [];
    try {
      const distinct = new Map(calls.flatMap(({ keys }) => keys.map((key) => [keyText(key), key] as const)));
      const items = new Map((await read([...distinct.values()])).map((item) => [keyText(item), item]));
      for (const { keys, resolve } of calls) resolve(keys.flatMap((key) => items.get(keyText(key)) ?? []));
    } catch (error) {
      if (calls.length === 1) return calls[0]!.reject(error);
      await Promise.all(calls.map(({ keys, resolve, reject }) => read(keys).then(resolve, reject)));
    }
  };
  return (keys) =>
    new Promise((resolve, reject) => {
      if (asked.length === 0) setImmediate(() => void flush());
      asked.push({ keys, resolve, reject });
    });
}

/**
 * The store's calls with items, keys and expression values as plain JavaScript values, what
 * lib-dynamodb's DocumentClient offers. Not that client, because it cannot cache the SDK's
 * middleware stack (it refuses `cacheMiddleware`): it resolves the stack and builds a second
 * command on every call. The conversion is util-dynamodb's, which it also uses.
 */
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DeleteItemCommandInput,
  type GetItemCommandInput,
  type PutItemCommandInput,
  type QueryCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall, type NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import { dynamoDb } from './client';

/** An item, a key or a set of expression values, as plain JavaScript values. */
export type Item = Record<string, NativeAttributeValue>;

type WithValues<Input> = Omit<Input, 'ExpressionAttributeValues'> & { ExpressionAttributeValues?: Item };

const toAttributes = (values: Item) => marshall(values, { removeUndefinedValues: true });
const fromAttributes = (attributes: Record<string, AttributeValue> | undefined) => attributes && unmarshall(attributes);
const valuesOf = (input: { ExpressionAttributeValues?: Item }) =>
  input.ExpressionAttributeValues && toAttributes(input.ExpressionAttributeValues);

export async function getItem(input: Omit<GetItemCommandInput, 'Key'> & { Key: Item }): Promise<Item | undefined> {
  const { Item } = await dynamoDb().send(new GetItemCommand({ ...input, Key: toAttributes(input.Key) }));
  return fromAttributes(Item);
}

export async function putItem(input: WithValues<Omit<PutItemCommandInput, 'Item'>> & { Item: Item }): Promise<void> {
  await dynamoDb().send(new PutItemCommand({ ...input, Item: toAttributes(input.Item), ExpressionAttributeValues: valuesOf(input) }));
}

/** The item's attributes as `ReturnValues` asks for them. */
export async function updateItem(input: WithValues<Omit<UpdateItemCommandInput, 'Key'>> & { Key: Item }): Promise<Item | undefined> {
  const { Attributes } = await dynamoDb().send(
    new UpdateItemCommand({ ...input, Key: toAttributes(input.Key), ExpressionAttributeValues: valuesOf(input) }),
  );
  return fromAttributes(Attributes);
}

/** The item's attributes as `ReturnValues` asks for them. */
export async function deleteItem(input: WithValues<Omit<DeleteItemCommandInput, 'Key'>> & { Key: Item }): Promise<Item | undefined> {
  const { Attributes } = await dynamoDb().send(
    new DeleteItemCommand({ ...input, Key: toAttributes(input.Key), ExpressionAttributeValues: valuesOf(input) }),
  );
  return fromAttributes(Attributes);
}

export interface QueryPage {
  items: Item[];
  /** Where the next page starts; undefined when the query has no more items. */
  lastEvaluatedKey?: Item;
  /** Items DynamoDB read to answer. */
  scannedCount: number;
}

export async function queryItems(input: QueryInput): Promise<QueryPage> {
  const page = await dynamoDb().send(
    new QueryCommand({
      ...input,
      ExpressionAttributeValues: valuesOf(input),
      ExclusiveStartKey: input.ExclusiveStartKey && toAttributes(input.ExclusiveStartKey),
    }),
  );
  return {
    items: (page.Items ?? []).map((item) => unmarshall(item)),
    lastEvaluatedKey: fromAttributes(page.LastEvaluatedKey),
    scannedCount: page.ScannedCount ?? 0,
  };
}

type QueryInput = WithValues<Omit<QueryCommandInput, 'ExclusiveStartKey'>> & { ExclusiveStartKey?: Item };

/**
 * The query's pages in order, from its `ExclusiveStartKey` on, until it has no more or, with
 * `limit`, until `limit` items have come: each page asks for the items still missing, as DynamoDB
 * may end a page (at 1 MB, or at a filter) with fewer than it was asked for. `input` as a function:
 * made again for each page (a filter on the time of each request).
 */
export async function* queryPages(input: QueryInput | (() => QueryInput), limit?: number): AsyncGenerator<QueryPage> {
  const inputOf = typeof input === 'function' ? input : () => input;
  let startKey = inputOf().ExclusiveStartKey;
  let count = 0;
  do {
    const page = await queryItems({ ...inputOf(), ...(limit === undefined ? {} : { Limit: limit - count }), ExclusiveStartKey: startKey });
    count += page.items.length;
    yield page;
    startKey = page.lastEvaluatedKey;
  } while (startKey && (limit === undefined || count < limit));
}

/**
 * The query's pages one call at a time, each of up to the `limit` that call asks for: for a reader
 * that sizes each page by what it has read so far. Undefined once the query has no more pages.
 */
export function pageReader(input: Omit<QueryInput, 'Limit'>): (limit: number) => Promise<QueryPage | undefined> {
  let nextLimit = 0;
  const pages = queryPages(() => ({ ...input, Limit: nextLimit }));
  return async (limit) => {
    nextLimit = limit;
    const next = await pages.next();
    return next.done ? undefined : next.value;
  };
}

export interface QueryResult {
  items: Item[];
  /** Items DynamoDB read to answer (its ScannedCount), for the benchmark's cost figures. */
  itemsRead: number;
  requests: number;
}

/** Up to `limit` items of the query (without one, every item), page after page: every list's page is read with it. */
export async function queryUntilFull(input: QueryInput, limit?: number): Promise<QueryResult> {
  const result: QueryResult = { items: [], itemsRead: 0, requests: 0 };
  for await (const page of queryPages(input, limit)) {
    result.items.push(...page.items);
    result.itemsRead += page.scannedCount;
    result.requests += 1;
  }
  return result;
}

/** Every item the query matches, page after page; and how many requests that took. */
export async function queryAllItems(input: Omit<QueryInput, 'ExclusiveStartKey'>): Promise<QueryResult> {
  return queryUntilFull(input);
}

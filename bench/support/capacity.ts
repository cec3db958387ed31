import { GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoDbClient, tableName } from '../../lib/store/client';
import { TABLE_KEYS, tableDefinition } from '../../lib/store/table';
import { interceptDynamoDb } from './store';

type Attributes = Record<string, AttributeValue>;

/**
 * Read and write request units as DynamoDB on-demand bills them, counted request by request from the
 * items' sizes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html,
 * .../GSI.html#GSI.ThroughputConsiderations.Writes):
 * - an item's size is its attribute names' UTF-8 bytes plus its values' (a string its UTF-8 bytes, a
 *   number 1 byte per two significant digits plus 1, binary its bytes, a boolean or null 1, a list or
 *   map 3 bytes plus 1 per element plus its elements' names and values);
 * - a read: 1 RRU per 4 KB of each item (rounded up, at least 1; half for an eventually consistent
 *   one), an item asked for that does not exist 1 (or half); a Query the items it returned together;
 * - a write to the table: 1 WRU per KB of the larger of the item before and after (at least 1); a
 *   write whose condition fails the same, of the item as it was;
 * - each GSI an item is written to: 1 WRU per KB of its index entry (the keys, or the whole item for
 *   ALL) for an entry added, removed, or whose projected values change; 2 writes when its keys change.
 * The items before and after each write are read with a client of their own (not counted), so that
 * sizes are exact whatever the update expression does; the service's calls are unchanged, but they
 * take longer meanwhile: time nothing while a meter runs. Dynalite's own count (ReturnConsumedCapacity,
 * asked for here) covers the table only, and is kept beside ours as a check.
 */
export class CapacityMeter {
  /** Per request kind (command and, for updates, what they set). */
  readonly kinds = new Map<string, { requests: number; rru: number; wru: number; wruByIndex: Record<string, number> }>();
  /** Dynalite's ConsumedCapacity over the same requests (the table only, and not failed conditions). */
  readonly dynalite = { read: 0, write: 0 };
  private readonly shadow: DynamoDBClient = createDynamoDbClient();
  private readonly indexes = tableDefinition('').GlobalSecondaryIndexes.map(({ IndexName, KeySchema, Projection }) => ({
    name: IndexName,
    keys: KeySchema.map(({ AttributeName }) => AttributeName),
    all: Projection.ProjectionType === 'ALL',
  }));

  start(): void {
    interceptDynamoDb((command, input, send) => this.intercept(command, input, send));
  }

  stop(): void {
    interceptDynamoDb(undefined);
  }

  reset(): void {
    this.kinds.clear();
    this.dynalite.read = 0;
    this.dynalite.write = 0;
  }

  totals(): { requests: number; rru: number; wru: number; wruByIndex: Record<string, number> } {
    const total = { requests: 0, rru: 0, wru: 0, wruByIndex: {} as Record<string, number> };
    for (const kind of this.kinds.values()) {
      total.requests += kind.requests;
      total.rru += kind.rru;
      total.wru += kind.wru;
      for (const [index, units] of Object.entries(kind.wruByIndex)) total.wruByIndex[index] = (total.wruByIndex[index] ?? 0) + units;
    }
    return total;
  }

  private async intercept(command: string, input: Record<string, unknown>, send: () => Promise<{ output: unknown }>): Promise<{ output: unknown }> {
    const name = command.replace(/Command$/, '');
    if (name === 'PutItem' || name === 'UpdateItem' || name === 'DeleteItem') return this.write(name, input, send);
    input.ReturnConsumedCapacity = 'TOTAL';
    const result = await send();
    const output = result.output as { Item?: Attributes; Items?: Attributes[]; Responses?: Record<string, Attributes[]>; ConsumedCapacity?: unknown };
    this.dynalite.read += dynaliteUnits(output.ConsumedCapacity);
    const consistent = (input.ConsistentRead as boolean | undefined) === true && input.IndexName === undefined;
    const units = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);
    if (name === 'GetItem') {
      const item = input.ProjectionExpression ? await this.read(input.Key as Attributes) : output.Item;
      this.add(name, units(item ? itemBytes(item) : 0), 0, {});
    } else if (name === 'BatchGetItem') {
      const [request] = Object.values(input.RequestItems as Record<string, { Keys: Attributes[]; ConsistentRead?: boolean; ProjectionExpression?: string }>);
      const batchUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 4096)) * (request!.ConsistentRead ? 1 : 0.5);
      const returned = Object.values(output.Responses ?? {}).flat();
      let rru = 0;
      for (const key of request!.Keys) {
        const found = returned.find((item) => sameKey(item, key));
        const item = found && request!.ProjectionExpression ? await this.read(key) : found;
        rru += batchUnits(item ? itemBytes(item) : 0);
      }
      this.add(name, rru, 0, {});
    } else if (name === 'Query') {
      this.add(name, units((output.Items ?? []).reduce((sum, item) => sum + itemBytes(item), 0)), 0, {});
    } else {
      this.add(name, 0, 0, {});
    }
    return result;
  }

  private async write(name: string, input: Record<string, unknown>, send: () => Promise<{ output: unknown }>): Promise<{ output: unknown }> {
    const key = (input.Key as Attributes | undefined) ?? keyOf(input.Item as Attributes);
    const kind = name === 'UpdateItem' ? `UpdateItem ${String(input.UpdateExpression).split(/[ ,]/).slice(0, 2).join(' ')}` : name;
    const before = await this.read(key);
    input.ReturnConsumedCapacity = 'TOTAL';
    let result: { output: unknown };
    try {
      result = await send();
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') this.add(`${kind} (condition failed)`, 0, writeUnits(before ? itemBytes(before) : 0), {});
      throw error;
    }
    this.dynalite.write += dynaliteUnits((result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity);
    const after = name === 'DeleteItem' ? undefined : name === 'PutItem' ? (input.Item as Attributes) : await this.read(key);
    const table = writeUnits(Math.max(before ? itemBytes(before) : 0, after ? itemBytes(after) : 0));
    const byIndex: Record<string, number> = {};
    for (const index of this.indexes) {
      const units = this.indexWrites(index, before, after);
      if (units > 0) byIndex[index.name] = units;
    }
    this.add(kind, 0, table + Object.values(byIndex).reduce((sum, units) => sum + units, 0), byIndex);
    return result;
  }

  /** WRU of one GSI for an item changing from `before` to `after` (either absent). */
  private indexWrites(index: { keys: string[]; all: boolean }, before: Attributes | undefined, after: Attributes | undefined): number {
    const entry = (item: Attributes | undefined): Attributes | undefined => {
      if (!item || index.keys.some((name) => item[name] === undefined)) return undefined;
      if (index.all) return item;
      return Object.fromEntries([...new Set([TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, ...index.keys])].map((name) => [name, item[name]!]));
    };
    const [old, now] = [entry(before), entry(after)];
    if (!old && !now) return 0;
    if (!old || !now) return writeUnits(itemBytes((old ?? now)!));
    if (index.keys.some((name) => !sameValue(old[name]!, now[name]!))) return writeUnits(itemBytes(old)) + writeUnits(itemBytes(now));
    return sameItem(old, now) ? 0 : writeUnits(Math.max(itemBytes(old), itemBytes(now)));
  }

  private async read(key: Attributes): Promise<Attributes | undefined> {
    const { Item } = await this.shadow.send(new GetItemCommand({ TableName: tableName(), Key: key, ConsistentRead: true }));
    return Item;
  }

  private add(kind: string, rru: number, wru: number, byIndex: Record<string, number>): void {
    let entry = this.kinds.get(kind);
    if (!entry) this.kinds.set(kind, (entry = { requests: 0, rru: 0, wru: 0, wruByIndex: {} }));
    entry.requests += 1;
    entry.rru += rru;
    entry.wru += wru;
    for (const [index, units] of Object.entries(byIndex)) entry.wruByIndex[index] = (entry.wruByIndex[index] ?? 0) + units;
  }
}

const dynaliteUnits = (consumed: unknown) => ([consumed ?? []].flat() as Array<{ CapacityUnits?: number }>).reduce((sum, { CapacityUnits = 0 }) => sum + CapacityUnits, 0);
const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const keyOf = (item: Attributes): Attributes => ({ [TABLE_KEYS.partitionKey]: item[TABLE_KEYS.partitionKey]!, [TABLE_KEYS.sortKey]: item[TABLE_KEYS.sortKey]! });
const sameKey = (item: Attributes, key: Attributes) => Object.entries(key).every(([name, value]) => item[name] !== undefined && sameValue(item[name]!, value));
const sameValue = (a: AttributeValue, b: AttributeValue) => JSON.stringify(a) === JSON.stringify(b);
const sameItem = (a: Attributes, b: Attributes) => Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([name, value]) => b[name] !== undefined && sameValue(value, b[name]!));

/** An item's size in bytes as DynamoDB counts it for capacity (see CapacityMeter). */
export function itemBytes(item: Attributes): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + valueBytes(value), 0);
}

function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return numberBytes(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueBytes(element), 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((sum, [name, element]) => sum + 1 + Buffer.byteLength(name) + valueBytes(element), 0);
  if (value.SS !== undefined) return value.SS.reduce((sum, element) => sum + Buffer.byteLength(element), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, element) => sum + numberBytes(element), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, element) => sum + element.byteLength, 0);
  return 0;
}

/** 1 byte per two significant digits (leading and trailing zeros trimmed), plus 1. */
function numberBytes(text: string): number {
  const digits = text.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GSI2, GSI3 } from '../../lib/store/table';

/** What one partition key (of the table or of an index) took: requests, and write and read units as DynamoDB bills them. */
export interface PartitionLoad {
  /** `table`, `gsi2` or `gsi3`. */
  index: string;
  partition: string;
  writes: number;
  reads: number;
  wcu: number;
  rcu: number;
}

type Attributes = Record<string, AttributeValue>;

/** An item's index keys as this meter last saw them written, and its size. */
interface Indexed {
  gsi2pk?: string;
  gsi3pk?: string;
  gsi3sk?: string;
  bytes: number;
}

const INDEXED = [GSI2.partitionKey, GSI3.partitionKey, GSI3.sortKey] as const;

/** DynamoDB's item size: attribute names and values, in bytes (numbers taken at their text's length). */
function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return value.N.length;
  if (value.B !== undefined) return value.B.byteLength;
  if (value.L !== undefined) return 3 + value.L.reduce((sum, entry) => sum + 1 + valueBytes(entry), 0);
  if (value.M !== undefined) return 3 + itemBytes(value.M);
  if (value.SS !== undefined) return value.SS.reduce((sum, entry) => sum + Buffer.byteLength(entry), 0);
  return 1;
}

const itemBytes = (item: Attributes) => Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + valueBytes(value), 0);
const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
const readUnits = (bytes: number, consistent: boolean) => Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);
const keyString = (key: Attributes) => `${key.pk?.S}\u0000${key.sk?.S}`;

/**
 * Counts, per partition key, the requests and capacity units that DynamoDB requests take, index
 * writes included: an index entry is written when an item enters it, leaves it, or changes its keys
 * (a key change is a delete and a put, two writes); both indexes are keys only, 1 WCU an entry. An item's index keys are followed from the writes seen, so the items whose index
 * writes are to be counted must be created while the meter watches (the messages are).
 */
export class PartitionMeter {
  private readonly loads = new Map<string, PartitionLoad>();
  private readonly items = new Map<string, Indexed>();

  private add(index: string, partition: string | undefined, kind: 'write' | 'read', units: number): void {
    if (partition === undefined) return;
    const id = `${index} ${partition}`;
    let load = this.loads.get(id);
    if (!load) this.loads.set(id, (load = { index, partition, writes: 0, reads: 0, wcu: 0, rcu: 0 }));
    if (kind === 'write') {
      load.writes += 1;
      load.wcu += units;
    } else {
      load.reads += 1;
      load.rcu += units;
    }
  }

  /** One request: its command, its input as the SDK client got it, and its output (undefined when it failed). */
  observe(command: string, input: Record<string, unknown>, output: Record<string, unknown> | undefined): void {
    if (command === 'GetItemCommand') {
      const item = output?.Item as Attributes | undefined;
      this.add('table', (input.Key as Attributes).pk?.S, 'read', readUnits(item ? itemBytes(item) : 0, input.ConsistentRead === true));
    } else if (command === 'BatchGetItemCommand') {
      for (const [table, { Keys, ConsistentRead }] of Object.entries(input.RequestItems as Record<string, { Keys: Attributes[]; ConsistentRead?: boolean }>)) {
        const found = new Map(((output?.Responses as Record<string, Attributes[]> | undefined)?.[table] ?? []).map((item) => [keyString(item), item]));
        for (const key of Keys) {
          const item = found.get(keyString(key));
          this.add('table', key.pk?.S, 'read', readUnits(item ? itemBytes(item) : 0, ConsistentRead === true));
        }
      }
    } else if (command === 'QueryCommand') {
      const index = (input.IndexName as string | undefined) ?? 'table';
      const values = input.ExpressionAttributeValues as Attributes;
      const bytes = ((output?.Items as Attributes[] | undefined) ?? []).reduce((sum, item) => sum + itemBytes(item), 0);
      this.add(index, values[':pk']?.S, 'read', readUnits(bytes, input.ConsistentRead === true));
    } else if (command === 'PutItemCommand') {
      const item = input.Item as Attributes;
      const after = { ...indexKeysOf(item), bytes: itemBytes(item) };
      this.write(item, output ? after : undefined, after.bytes);
    } else if (command === 'UpdateItemCommand') {
      const key = input.Key as Attributes;
      const before = this.items.get(keyString(key));
      const after = output && before && { ...before, ...updatedIndexKeys(input.UpdateExpression as string, input.ExpressionAttributeValues as Attributes | undefined) };
      this.write(key, after, before?.bytes ?? 0);
    } else if (command === 'DeleteItemCommand') {
      const key = input.Key as Attributes;
      this.write(key, output ? { bytes: 0 } : undefined, this.items.get(keyString(key))?.bytes ?? 0, true);
    } else if (command === 'BatchWriteItemCommand') {
      for (const requests of Object.values(input.RequestItems as Record<string, Array<{ PutRequest?: { Item: Attributes }; DeleteRequest?: { Key: Attributes } }>>)) {
        for (const { PutRequest, DeleteRequest } of requests) {
          if (PutRequest) this.write(PutRequest.Item, { ...indexKeysOf(PutRequest.Item), bytes: itemBytes(PutRequest.Item) }, itemBytes(PutRequest.Item));
          if (DeleteRequest) this.write(DeleteRequest.Key, { bytes: 0 }, this.items.get(keyString(DeleteRequest.Key))?.bytes ?? 0, true);
        }
      }
    }
  }

  /**
   * A write of the item at `key`: billed on the table at the larger of its sizes before and after
   * (a failed conditional write too), and, when it was made (`after`), on the index partitions it
   * touched. Items it does not follow (made before it watched) are taken as in no index.
   */
  private write(key: Attributes, after: Indexed | undefined, bytesBefore: number, deleted = false): void {
    const id = keyString(key);
    const before = this.items.get(id);
    this.add('table', key.pk?.S, 'write', writeUnits(Math.max(bytesBefore, after?.bytes ?? 0)));
    if (!after) return;
    const gsi2Moved = deleted || before?.gsi2pk !== after.gsi2pk;
    if (gsi2Moved && before?.gsi2pk !== undefined) this.add('gsi2', before.gsi2pk, 'write', 1);
    if (gsi2Moved && !deleted && after.gsi2pk !== undefined) this.add('gsi2', after.gsi2pk, 'write', 1);
    const gsi3Moved = deleted || before?.gsi3pk !== after.gsi3pk || before?.gsi3sk !== after.gsi3sk;
    if (gsi3Moved && before?.gsi3pk !== undefined) this.add('gsi3', before.gsi3pk, 'write', 1);
    if (gsi3Moved && !deleted && after.gsi3pk !== undefined) this.add('gsi3', after.gsi3pk, 'write', 1);
    if (deleted) this.items.delete(id);
    else if (after.gsi2pk !== undefined || after.gsi3pk !== undefined) this.items.set(id, after);
  }

  /** Every partition key's load, the most written first. */
  partitions(): PartitionLoad[] {
    return [...this.loads.values()].sort((a, b) => b.wcu - a.wcu || b.rcu - a.rcu);
  }
}

function indexKeysOf(item: Attributes): Omit<Indexed, 'bytes'> {
  return Object.fromEntries(INDEXED.filter((name) => item[name]?.S !== undefined).map((name) => [name, item[name]!.S]));
}

/** The index keys an update expression sets (to the value named) or removes; those it leaves alone are absent. */
function updatedIndexKeys(expression: string, values: Attributes | undefined): Partial<Indexed> {
  const [set = '', remove = ''] = expression.split(/\bREMOVE\b/);
  const changed: Partial<Indexed> = {};
  for (const name of INDEXED) {
    const assigned = new RegExp(`\\b${name}\\s*=\\s*(:\\w+)`).exec(set);
    if (assigned) changed[name] = values?.[assigned[1]!]?.S;
    else if (new RegExp(`\\b${name}\\b`).test(remove)) changed[name] = undefined;
  }
  return changed;
}

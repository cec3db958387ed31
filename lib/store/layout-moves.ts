/** Moves of an earlier `npm start`'s items to the table's layout of today, each once per table (ensureTable in infra/local/embedded-dynamodb.ts). */
import { GetItemCommand, PutItemCommand, ScanCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient, type ScanCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { forEachChunk } from './batch';
import type { Item } from './items';
import { GSI2, internalTxIndexMarkKey, internalTxWebhooksPartition, WEBHOOK_SORT_KEY_PREFIX, type TableKey } from './table';

/**
 * A move of an earlier layout's items, once per table and marked done (`mark`): what the embedded
 * store of an earlier `npm start` holds (no AWS stage was ever deployed with those layouts). Every
 * item the scan finds goes to `move`, which says false for one it left as it was. With the caller's
 * own client, as the table's creation is: the service's client is left untouched until the service
 * uses it. `created`: a table just made, with nothing to move. Returns how many items it moved.
 */
export async function moveOnce(
  client: DynamoDBClient,
  table: string,
  mark: TableKey,
  created: boolean,
  scan: Omit<ScanCommandInput, 'TableName' | 'ExclusiveStartKey'>,
  move: (item: Item) => Promise<boolean | void>,
): Promise<number> {
  let moved = 0;
  if (!created && !(await client.send(new GetItemCommand({ TableName: table, Key: marshall(mark), ConsistentRead: true }))).Item) {
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await client.send(new ScanCommand({ ...scan, TableName: table, ExclusiveStartKey: startKey }));
      await forEachChunk((page.Items ?? []).map((attributes) => unmarshall(attributes)), 1, 16, async ([item]) => {
        if ((await move(item!)) !== false) moved += 1;
      });
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
  await client.send(new PutItemCommand({ TableName: table, Item: marshall({ ...mark, at: Date.now() }) }));
  return moved;
}

/**
 * Puts the active webhooks that ask for internal transactions, written before such webhooks had a
 * gsi2 partition of their own, into it: without it, their chain's blocks would not be traced.
 */
export async function indexInternalTxWebhooks(client: DynamoDBClient, table: string, { created }: { created: boolean }): Promise<number> {
  const scan = {
    FilterExpression: 'begins_with(sk, :webhook) AND attribute_exists(chainId) AND #status = :active AND includeInternalTxs = :true AND attribute_not_exists(#gsi2pk)',
    ProjectionExpression: 'pk, sk, chainId',
    ExpressionAttributeNames: { '#status': 'status', '#gsi2pk': GSI2.partitionKey },
    ExpressionAttributeValues: marshall({ ':webhook': WEBHOOK_SORT_KEY_PREFIX, ':active': 'active', ':true': true }),
  };
  return moveOnce(client, table, internalTxIndexMarkKey, created, scan, async (item) => {
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: marshall({ pk: item.pk, sk: item.sk }),
        UpdateExpression: 'SET #gsi2pk = :partition',
        ConditionExpression: '#status = :active AND includeInternalTxs = :true AND attribute_not_exists(#gsi2pk)',
        ExpressionAttributeNames: { '#gsi2pk': GSI2.partitionKey, '#status': 'status' },
        ExpressionAttributeValues: marshall({ ':partition': internalTxWebhooksPartition(item.chainId), ':active': 'active', ':true': true }),
      }),
    ).catch((error: Error) => {
      // Changed since the scan: its own write set its partition.
      if (error.name !== 'ConditionalCheckFailedException') throw error;
    });
  });
}

/**
 * The single table's key design. Every key string in the project is built here.
 *
 * | item            | pk                    | sk                | gsi1pk                              | gsi1sk             |
 * |-----------------|-----------------------|-------------------|-------------------------------------|--------------------|
 * | account         | ACCOUNT#<account>     | ACCOUNT           |                                     |                    |
 * | shared secret   | ACCOUNT#<account>     | SECRET            |                                     |                    |
 * | webhook         | ACCOUNT#<account>     | WEBHOOK#<id>      | ACCOUNT#<account>#WEBHOOKS#<status> | WEBHOOK#<id>       |
 * | API key         | APIKEY#<sha256 of key>| APIKEY            | ACCOUNT#<account>#APIKEYS           | APIKEY#<createdAt> |
 *
 * Webhook ids are UUIDv7, so `WEBHOOK#<id>` sorts by creation time and then by id: a descending
 * Query on the table (all webhooks) or on gsi1 (one status) reads the newest first, and one page
 * costs one Query that reads only the items it returns (plus one to know whether more follow).
 */
export const TABLE_KEYS = { partitionKey: 'pk', sortKey: 'sk' } as const;
export const GSI1 = { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' } as const;

export interface TableKey {
  pk: string;
  sk: string;
}

const accountPartition = (account: string) => `ACCOUNT#${account}`;

export const WEBHOOK_SORT_KEY_PREFIX = 'WEBHOOK#';

export const accountKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'ACCOUNT' });

export const sharedSecretKey = (account: string): TableKey => ({ pk: accountPartition(account), sk: 'SECRET' });

export const webhookKey = (account: string, id: string): TableKey => ({
  pk: accountPartition(account),
  sk: `${WEBHOOK_SORT_KEY_PREFIX}${id}`,
});

/** Where a webhook sits in gsi1: under its account and current status. */
export const webhookStatusIndexKey = (account: string, status: string, id: string) => ({
  gsi1pk: `${accountPartition(account)}#WEBHOOKS#${status}`,
  gsi1sk: `${WEBHOOK_SORT_KEY_PREFIX}${id}`,
});

export const apiKeyKey = (keyHash: string): TableKey => ({ pk: `APIKEY#${keyHash}`, sk: 'APIKEY' });

export const apiKeyAccountIndexKey = (account: string, createdAt: string) => ({
  gsi1pk: `${accountPartition(account)}#APIKEYS`,
  gsi1sk: `APIKEY#${createdAt}`,
});

/** The table as DynamoDB's CreateTable takes it; the CDK stack declares the same names. */
export function tableDefinition(tableName: string) {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: [TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey, GSI1.partitionKey, GSI1.sortKey].map((name) => ({
      AttributeName: name,
      AttributeType: 'S' as const,
    })),
    KeySchema: [
      { AttributeName: TABLE_KEYS.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: TABLE_KEYS.sortKey, KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: GSI1.indexName,
        KeySchema: [
          { AttributeName: GSI1.partitionKey, KeyType: 'HASH' as const },
          { AttributeName: GSI1.sortKey, KeyType: 'RANGE' as const },
        ],
        Projection: { ProjectionType: 'ALL' as const },
      },
    ],
  };
}

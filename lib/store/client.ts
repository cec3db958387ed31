import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { readFileSync } from 'node:fs';
import { ConfigurationError, runtimeConfig } from '../config/runtime';

let client: DynamoDBClient | undefined;

/** One client per process, reused across invocations so connections stay open (keep-alive). */
export function dynamoDb(): DynamoDBClient {
  client ??= createDynamoDbClient();
  return client;
}

export function tableName(): string {
  return runtimeConfig().tableName;
}

/**
 * The client resolves its middleware stack once per command class (`cacheMiddleware`), not on
 * every call: a middleware added after a command's first call does not apply to that command.
 */
export function createDynamoDbClient(): DynamoDBClient {
  const { dynamoDbEndpoint, dynamoDbCredentialFile, region } = runtimeConfig();
  const local = dynamoDbEndpoint !== undefined && /^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(dynamoDbEndpoint);
  // An in-memory embedded server, or DynamoDB Local, accepts any credentials; a machine without an AWS profile has none to give.
  const localCredentials = local && !process.env.AWS_ACCESS_KEY_ID ? { accessKeyId: 'local', secretAccessKey: 'local' } : undefined;
  const credentials = dynamoDbCredentialFile ? { accessKeyId: 'local', secretAccessKey: storeCredential(dynamoDbCredentialFile) } : localCredentials;
  const client = new DynamoDBClient({
    region,
    endpoint: dynamoDbEndpoint,
    maxAttempts: Number(process.env.DYNAMODB_MAX_ATTEMPTS) || 3,
    cacheMiddleware: true,
    ...(credentials ? { credentials } : {}),
  });
  // It copies every input and output through the sensitive-data filter for the SDK's logger, which
  // is a no-op here (we never give it one): 5-35 µs of CPU per call, the larger for bigger pages.
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

/** The secret the embedded store's requests are signed with; the store checks the signature, so it never travels. */
function storeCredential(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new ConfigurationError(`cannot read the embedded store's credential file ${file}: ${(error as Error).message}`);
  }
}

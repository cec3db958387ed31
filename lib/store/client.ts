import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { isLoopbackHttpUrl, localServiceCredentials } from '../config/local-services';
import { runtimeConfig } from '../config/runtime';

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
  const { dynamoDbEndpoint, dynamoDbCredentialFile, dynamoDbMaxAttempts, awsAccessKeyGiven, region } = runtimeConfig();
  const local = dynamoDbEndpoint !== undefined && isLoopbackHttpUrl(dynamoDbEndpoint);
  // DynamoDB Local on loopback takes the machine's AWS profile when it has one.
  const credentials = dynamoDbCredentialFile || (local && !awsAccessKeyGiven) ? localServiceCredentials(dynamoDbCredentialFile) : undefined;
  const client = new DynamoDBClient({
    region,
    endpoint: dynamoDbEndpoint,
    maxAttempts: dynamoDbMaxAttempts,
    cacheMiddleware: true,
    ...(credentials ? { credentials } : {}),
  });
  // It copies every input and output through the sensitive-data filter for the SDK's logger, which
  // is a no-op here (we never give it one): CPU spent on every call, the more for bigger pages.
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

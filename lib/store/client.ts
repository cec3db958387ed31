import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runtimeConfig } from '../config/runtime';

let documentClient: DynamoDBDocumentClient | undefined;

/** One client per process, reused across invocations so connections stay open (keep-alive). */
export function dynamoDb(): DynamoDBDocumentClient {
  documentClient ??= DynamoDBDocumentClient.from(createDynamoDbClient(), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return documentClient;
}

export function tableName(): string {
  return runtimeConfig().tableName;
}

export function createDynamoDbClient(): DynamoDBClient {
  const { dynamoDbEndpoint, region } = runtimeConfig();
  const local = dynamoDbEndpoint !== undefined && /^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(dynamoDbEndpoint);
  const client = new DynamoDBClient({
    region,
    endpoint: dynamoDbEndpoint,
    maxAttempts: Number(process.env.DYNAMODB_MAX_ATTEMPTS) || 3,
    // The embedded server accepts any credentials; a machine without an AWS profile has none to give.
    ...(local && !process.env.AWS_ACCESS_KEY_ID ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  // It copies every input and output through the sensitive-data filter for the SDK's logger, which
  // is a no-op here (we never give it one): 5-35 µs of CPU per call, the larger for bigger pages.
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

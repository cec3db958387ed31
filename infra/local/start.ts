import { DEFAULT_DYNAMODB_PORT } from '../../lib/config/runtime';
import { createApiKey, listApiKeys } from '../../lib/keys/api-keys';
import { API_KEY_HEADER } from '../../lib/keys/authorize';
import { localLogger as logger } from './local-logger';
import { startLocalService } from './local-service';

const DEV_ACCOUNT = 'dev';

async function main() {
  const service = await startLocalService({
    port: Number(process.env.PORT ?? 3000),
    dynamoDbPort: Number(process.env.DYNAMODB_PORT ?? DEFAULT_DYNAMODB_PORT),
    dataDir: process.env.DATA_DIR || '.data',
  });
  logger.info('started', { url: service.url, dynamoDbEndpoint: service.dynamoDbEndpoint });

  const lines = [`Webhook service listening on ${service.url} (DynamoDB at ${service.dynamoDbEndpoint})`];
  if ((await listApiKeys(DEV_ACCOUNT)).length === 0) {
    const { key } = await createApiKey(DEV_ACCOUNT);
    lines.push(
      `Created an API key for account '${DEV_ACCOUNT}'. It is shown only this once:`,
      `  ${key}`,
      'Try it:',
      `  curl -s -H '${API_KEY_HEADER}: ${key}' '${service.url}/v1/webhooks?pageSize=10'`,
    );
  } else {
    lines.push(`More keys: npm run keys -- create --account ${DEV_ACCOUNT}`);
  }
  // Printed, not logged: the one place a key is shown is the terminal of whoever started the server.
  process.stdout.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    await service.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', (signal) => void stop(signal));
  process.on('SIGTERM', (signal) => void stop(signal));
}

main().catch((error: unknown) => {
  logger.error('failed to start', error as Error);
  process.exit(1);
});

import './node-version-warning';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { ConfigurationError, DEFAULT_DYNAMODB_PORT } from '../../lib/config/runtime';
import { createApiKey, listApiKeys } from '../../lib/keys/api-keys';
import { API_KEY_HEADER } from '../../lib/keys/authorize';
import { OPENAPI_DOCUMENT_PATH } from '../../lib/openapi/document';
import { API_REFERENCE_PATH } from './api-reference';
import { dataDirOf } from './data-dir';
import { DEFAULT_DEV_CHAIN_ID, DEFAULT_DEV_CHAIN_PORT } from './dev-chain';
import { writeKeyFile } from './key-file';
import { localLogger as logger } from './local-logger';
import { startLocalService, type LocalService } from './local-service';
import { StartupError } from './startup-error';

const DEV_ACCOUNT = 'dev';

async function main() {
  const dataDir = dataDirOf(process.env);
  const service = await startLocalService({
    port: Number(process.env.PORT ?? 3000),
    host: process.env.HOST || '127.0.0.1',
    dynamoDbPort: Number(process.env.DYNAMODB_PORT ?? DEFAULT_DYNAMODB_PORT),
    dataDir,
    devChain: devChainOptions(),
    processes: { gateways: gatewayProcessCount() },
  });
  let lines: string[];
  try {
    lines = await banner(service, dataDir);
  } catch (error) {
    await service.close();
    throw service.explained(error);
  }
  logger.info('started', {
    url: service.url,
    dynamoDbEndpoint: service.dynamoDbEndpoint,
    dynamoDbPid: service.dynamoDbPid,
    gatewayPids: service.gatewayPids,
    backgroundPid: service.backgroundPid,
    devChain: service.devChain,
  });
  superviseUntilStopped(service);
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** What a person starting the server is told: where things are, and a key to try the API with. */
async function banner(service: LocalService, dataDir: string): Promise<string[]> {
  const lines = [
    `Webhook service listening on ${service.url} (DynamoDB at ${service.dynamoDbEndpoint})`,
    `API reference: ${service.url}${API_REFERENCE_PATH} (the OpenAPI document: ${service.url}${OPENAPI_DOCUMENT_PATH})`,
  ];
  if (service.devChain) {
    const port = new URL(service.devChain.rpcUrl).port;
    const variable = port === String(DEFAULT_DEV_CHAIN_PORT) ? '' : `DEV_CHAIN_PORT=${port} `;
    lines.push(`Dev chain ${service.devChain.chainId} at ${service.devChain.rpcUrl} (try: ${variable}npm run chain -- accounts)`);
  }
  if ((await listApiKeys(DEV_ACCOUNT)).length === 0) lines.push(...(await firstDevKey(service, dataDir)));
  else {
    // The keys CLI signs with its DATA_DIR's store credential.
    const store = process.env.DYNAMODB_ENDPOINT ? '' : `${process.env.DATA_DIR ? `DATA_DIR=${dataDir} ` : ''}DYNAMODB_PORT=${new URL(service.dynamoDbEndpoint).port} `;
    lines.push(`More keys: ${store}npm run keys -- create --account ${DEV_ACCOUNT}`);
  }
  return lines;
}

/**
 * GATEWAY_PROCESSES: how many processes serve the API; by default one per core but one, which the
 * store's process needs, and at most 4. On 2 cores a second gateway process made the list and create
 * cost 40-60 % more CPU a request at concurrency 8 (bench/README.md).
 */
function gatewayProcessCount(): number {
  const given = process.env.GATEWAY_PROCESSES;
  if (!given) return Math.max(1, Math.min(4, availableParallelism() - 1));
  if (!/^[1-9]\d{0,2}$/.test(given)) throw new ConfigurationError(`GATEWAY_PROCESSES must be a whole number from 1 to 999, got '${given}'`);
  return Number(given);
}

/** DEV_CHAIN=off: no dev chain; DEV_CHAIN_PORT and DEV_CHAIN_ID: where it listens and its chain id. */
function devChainOptions() {
  if (process.env.DEV_CHAIN === 'off') return undefined;
  const chainId = process.env.DEV_CHAIN_ID || DEFAULT_DEV_CHAIN_ID;
  if (!/^[1-9]\d{0,18}$/.test(chainId)) throw new ConfigurationError(`DEV_CHAIN_ID must be a chain id (a positive whole number), got '${chainId}'`);
  const port = Number(process.env.DEV_CHAIN_PORT || DEFAULT_DEV_CHAIN_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigurationError(`DEV_CHAIN_PORT must be a port number, got '${process.env.DEV_CHAIN_PORT}'`);
  return { port, chainId };
}

/**
 * The one time a key is shown. On a terminal it is printed for whoever started the server; when
 * stdout goes elsewhere (a log file, a pipe), it is written to a file only its owner can read, and
 * only that file's path is printed, so that the key is never in a log.
 */
async function firstDevKey(service: LocalService, dataDir: string): Promise<string[]> {
  const { key } = await createApiKey(DEV_ACCOUNT);
  const tryIt = (keyExpression: string) => `  curl -s -H "${API_KEY_HEADER}: ${keyExpression}" '${service.url}/v1/webhooks?pageSize=10'`;
  if (process.stdout.isTTY) {
    return [`Created an API key for account '${DEV_ACCOUNT}'. It is shown only this once:`, `  ${key}`, 'Try it:', tryIt(key)];
  }
  const file = path.join(dataDir, 'dev-api-key');
  await writeKeyFile(file, key);
  logger.info('created an API key for the dev account', { account: DEV_ACCOUNT, file });
  return [`Created an API key for account '${DEV_ACCOUNT}' in ${file} (readable by you only). Try it:`, tryIt(`$(cat ${file})`)];
}

/**
 * SIGINT and SIGTERM stop the service cleanly. If the embedded DynamoDB's process dies, the service
 * reports it and stops too, rather than answering 503 to everything; so it does if the background
 * process dies, rather than accepting webhooks it would never notify, and if a gateway process dies.
 */
function superviseUntilStopped(service: LocalService) {
  let stopping = false;
  const stop = async (reason: string, exitCode: number) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { reason });
    await service.close();
    logger.info('stopped');
    process.exit(exitCode);
  };
  process.on('SIGINT', (signal) => void stop(signal, 0));
  process.on('SIGTERM', (signal) => void stop(signal, 0));
  void service.storeExit.then((exit) => {
    logger.error('the embedded DynamoDB process exited; stopping', { exitCode: exit.code, signal: exit.signal, reason: exit.reason });
    void stop('embedded DynamoDB exited', 1);
  });
  void service.gatewayExit.then((exit) => {
    logger.error('a gateway process exited; stopping', { pid: exit.pid, exitCode: exit.code, signal: exit.signal });
    void stop('gateway process exited', 1);
  });
  void service.backgroundExit.then((exit) => {
    logger.error('the background process exited; stopping', { exitCode: exit.code, signal: exit.signal });
    void stop('background process exited', 1);
  });
}

main().catch((error: unknown) => {
  if (error instanceof StartupError || error instanceof ConfigurationError) logger.error('failed to start', { reason: error.message });
  else logger.error('failed to start', error as Error);
  process.exit(1);
});

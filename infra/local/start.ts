import './node-version-warning';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { createWalletClient, http } from 'viem';
import { ConfigurationError, DEFAULT_DYNAMODB_PORT } from '../../lib/config/runtime';
import { createApiKey, listApiKeys } from '../../lib/keys/api-keys';
import { API_KEY_HEADER } from '../../lib/keys/authorize';
import { OPENAPI_DOCUMENT_PATH } from '../../lib/openapi/document';
import { CONSOLE_PATH } from '../console-headers';
import { API_REFERENCE_PATH } from './api-reference';
import { dataDirOf } from './data-dir';
import { DEFAULT_DEV_CHAIN_ID, DEFAULT_DEV_CHAIN_PORT } from './dev-chain';
import { readKeyFile, writeKeyFile } from './key-file';
import { deliveryLog, localLogger as logger, logsRequests, requestLog } from './local-logger';
import { startLocalService, type LocalService } from './local-service';
import { StartupError } from './startup-error';

const DEV_ACCOUNT = 'dev';

async function main() {
  const dataDir = dataDirOf(process.env);
  const service = await startLocalService({
    env: process.env,
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

/** What a person starting the server is told: where things are, a key to try the API with, and the loop from a transaction to a notification. */
async function banner(service: LocalService, dataDirGiven: string): Promise<string[]> {
  // Absolute: the commands it prints are run in other terminals, from other directories.
  const dataDir = path.resolve(dataDirGiven);
  const lines = [
    `Console: ${service.url}${CONSOLE_PATH} (sign in with the dev account's API key, below)`,
    `Webhook service listening on ${service.url} (DynamoDB at ${service.dynamoDbEndpoint})`,
    `API reference: ${service.url}${API_REFERENCE_PATH} (the OpenAPI document: ${service.url}${OPENAPI_DOCUMENT_PATH})`,
  ];
  if (logsRequests) lines.push(requestLogLine(dataDir));
  if (service.devChain) lines.push(`Dev chain ${service.devChain.chainId} at ${service.devChain.rpcUrl} (try: ${devChainPortPrefix(service.devChain.rpcUrl)}npm run chain -- accounts)`);
  const devKey = (await listApiKeys(DEV_ACCOUNT)).length === 0 ? await firstDevKey(service, dataDir) : await laterDevKey(service, dataDir);
  lines.push(...devKey.lines);
  if (service.devChain) lines.push(...(await notificationLoop(service, service.devChain.rpcUrl, devKey, dataDir)));
  return lines;
}

/** `DEV_CHAIN_PORT=<port> ` when the dev chain is not on its default port: what `npm run chain` needs to find it. */
function devChainPortPrefix(rpcUrl: string): string {
  const port = new URL(rpcUrl).port;
  return port === String(DEFAULT_DEV_CHAIN_PORT) ? '' : `DEV_CHAIN_PORT=${port} `;
}

/** How the banner's commands name the dev key: a file holding it, or a shell variable the banner had set. */
interface DevKey {
  lines: string[];
  /** What a command line puts in the API key header: `$(cat <file>)` or `$KEY`. */
  shellValue: string;
  file?: string;
  /** How to set KEY, when the banner did not. */
  howToSetKey?: string;
}

/**
 * The one time a key is shown. On a terminal it is printed for whoever started the server; when
 * stdout goes elsewhere (a log file, a pipe), it is written to a file only its owner can read, and
 * only that file's path is printed, so that the key is never in a log.
 */
async function firstDevKey(service: LocalService, dataDir: string): Promise<DevKey> {
  const { key } = await createApiKey(DEV_ACCOUNT, { name: 'npm start' });
  const tryIt = (keyValue: string) => `  curl -s -H "${API_KEY_HEADER}: ${keyValue}" '${service.url}/v1/webhooks?pageSize=10'`;
  if (process.stdout.isTTY) {
    return {
      lines: [
        `Created an API key for account '${DEV_ACCOUNT}'. It is shown only this once:`,
        `  ${key}`,
        'Try it, in a second terminal (KEY keeps the key there for the commands below):',
        `  KEY=${key};${tryIt('$KEY').slice(1)}`,
      ],
      shellValue: '$KEY',
    };
  }
  const file = devKeyFile(dataDir);
  await writeKeyFile(file, key);
  logger.info('created an API key for the dev account', { account: DEV_ACCOUNT, file });
  return {
    lines: [`Created an API key for account '${DEV_ACCOUNT}' in ${file} (readable by you only). Try it:`, tryIt(`$(cat ${shellWord(file)})`)],
    shellValue: `$(cat ${shellWord(file)})`,
    file,
  };
}

/** A start after the first: the dev key is in its file if it was written to one, else with whoever saw it at the first start. */
async function laterDevKey(service: LocalService, dataDir: string): Promise<DevKey> {
  // The keys CLI signs with its DATA_DIR's store credential.
  const store = process.env.DYNAMODB_ENDPOINT ? '' : `${process.env.DATA_DIR ? `DATA_DIR=${shellWord(dataDir)} ` : ''}DYNAMODB_PORT=${new URL(service.dynamoDbEndpoint).port} `;
  const lines = [`More keys: ${store}npm run keys -- create --account ${DEV_ACCOUNT}`];
  // The key file npm start wrote (stdout was not a terminal), or the one the banner's loop had saved.
  for (const file of [devKeyFile(dataDir), loopKeyFile(dataDir)]) {
    if (await readKeyFile(file)) return { lines, shellValue: `$(cat ${shellWord(file)})`, file };
  }
  return { lines, shellValue: '$KEY', howToSetKey: `  (set KEY to the '${DEV_ACCOUNT}' key printed at the first start, or to one the line above makes)` };
}

const devKeyFile = (dataDir: string) => path.join(dataDir, 'dev-api-key');
const loopKeyFile = (dataDir: string) => path.join(dataDir, 'loop-key');

/** `text` as one word of a shell command: as it is when nothing in it is special, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

function requestLogLine(dataDir: string): string {
  try {
    return `Request log: ${requestLog.create(dataDir)} (one line per request); delivery log: ${deliveryLog.fileOf(dataDir)} (one line per delivery attempt); the terminal keeps start-up, follower progress, maintenance summaries, warnings and errors`;
  } catch (error) {
    return `Request log: none (${(error as Error).message}); request lines go to the terminal`;
  }
}

/** Where `npm run receiver` listens, and the API it asks for the shared secret, unless told otherwise (infra/receiver-cli.ts). */
const RECEIVER_URL = 'http://127.0.0.1:4000/';
const RECEIVER_DEFAULT_API = 'http://127.0.0.1:3000';

/**
 * The steps from a transaction to a notification on the dev chain: a receiver, a webhook pointing at
 * it that watches the second dev account, and a transfer to that account.
 */
async function notificationLoop(service: LocalService, rpcUrl: string, devKey: DevKey, dataDir: string): Promise<string[]> {
  // The dev chain has just answered; should it not now, the rest of the banner still stands.
  const [, watched] = await createWalletClient({ transport: http(rpcUrl) })
    .getAddresses()
    .catch(() => []);
  if (!watched) return [];
  const api = service.url === RECEIVER_DEFAULT_API ? '' : ` --api ${service.url}`;
  const webhook = { url: RECEIVER_URL, chainId: service.devChain!.chainId, eventType: 'address_activity', metadata: { addresses: [watched] } };
  // The receiver checks signatures with the shared secret, which it reads with a key from a file: the
  // key shown on the terminal is saved to one by the person who has it (npm start writes none then).
  const keyFile = shellWord(devKey.file ?? loopKeyFile(dataDir));
  const steps = [
    ...(devKey.file
      ? []
      : [['Where KEY is set, save the key for the receiver (readable by you only):', `(umask 077 && echo "$KEY" > ${keyFile})`]]),
    ['In a terminal of its own, a receiver that prints each notification and checks its signatures (`--port N` moves it off 4000: then change the webhook\'s url below to match):', `npm run receiver -- --key-file ${keyFile}${api}`],
    [
      `${devKey.file ? 'In a second terminal' : 'Where KEY is set'}, a webhook pointing at the receiver, watching the second dev account (once: two such webhooks each get the transfer):`,
      `curl -s -X POST -H "${API_KEY_HEADER}: ${devKey.shellValue}" -H 'content-type: application/json' '${service.url}/v1/webhooks' -d '${JSON.stringify(webhook)}'; echo`,
    ],
    ['Then send that account 1.5 ETH on the dev chain: within a second or so the receiver prints the notification.', `${devChainPortPrefix(rpcUrl)}npm run chain -- send --to ${watched} --value 1.5`],
  ];
  return [
    'From a transaction to a notification:',
    ...(devKey.howToSetKey ? [devKey.howToSetKey] : []),
    ...steps.flatMap(([what, command], index) => [`  ${index + 1}. ${what}`, `       ${command}`]),
  ];
}

/**
 * GATEWAY_PROCESSES: how many processes serve the API; by default one per core but one, which the
 * store's process needs, and at most 4: gateway processes beyond the free cores compete with the
 * store for them, and each request costs more CPU (bench/README.md).
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
 * SIGINT and SIGTERM stop the service cleanly. If the embedded DynamoDB's process dies, the service
 * reports it and stops too, rather than answering 503 to everything; so it does if the background
 * process dies, rather than accepting webhooks it would never notify, if a gateway process dies, and
 * if the dev chain does, rather than follow a chain that is gone.
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
  void service.devChainExit.then((exit) => {
    logger.error('the dev chain exited; stopping', { exitCode: exit.code, signal: exit.signal });
    void stop('dev chain exited', 1);
  });
}

main().catch((error: unknown) => {
  if (error instanceof StartupError || error instanceof ConfigurationError) logger.error('failed to start', { reason: error.message });
  else logger.error('failed to start', error as Error);
  process.exit(1);
});

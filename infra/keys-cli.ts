import './local/node-version-warning';
import './cli-output';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_DYNAMODB_PORT, runtimeConfig } from '../lib/config/runtime';
import { stageSettings, type UsagePlanName } from '../lib/config/stages';
import { API_KEY_ID_PATTERN, apiKeyId, isApiKeyForm, listApiKeys } from '../lib/keys/api-keys';
import { name } from '../lib/schemas/fields';
import { escapeHidden } from '../lib/text';
import { describeDeployedStage, type DeployedStage } from './deployed-stage';
import { createKey, revokeKey, type RevocationTarget } from './key-commands';
import { dataDirOf, DEFAULT_DATA_DIR, ensureStoreCredential, makeDataDirPrivate } from './local/data-dir';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from './local/embedded-dynamodb';
import { keyFileArgument } from './local/key-file';
import { useRunningStore } from './local/running-store';

const USAGE = `Usage:
  npm run keys -- create --account <name> [--name <label>] [--stage <stage>] [--plan standard|unlimited]
      create a key (and the account, if new), labelled <label> in listings; the key is the last line printed
  npm run keys -- list --account <name> [--stage <stage>]
      list an account's keys (ids only: keys are never stored)
  npm run keys -- revoke <key id> --account <name> [--stage <stage>]
      revoke the key that list shows with that id (no need to hold the key), and every key it made
  npm run keys -- revoke --key-file <file> [--stage <stage>]
      revoke the key held in <file> ('-' reads it from stdin), and every key it made: a key never goes
      on the command line

Without --stage the store is found like npm start finds it: DYNAMODB_ENDPOINT (+ TABLE_NAME), else
DYNAMODB_PORT (default ${DEFAULT_DYNAMODB_PORT}); when nothing listens there, the data directory
(DATA_DIR, default ./${DEFAULT_DATA_DIR}) is opened directly.
With --stage, the stage deployed by \`cdk deploy -c stage=<stage>\` in the AWS account and region of
your AWS credentials: create also makes the key's API Gateway API key under the stage's usage plan
(its value a random usage identifier, never the key), and revoke deletes it.`;

const COMMANDS = ['create', 'list', 'revoke'];
const PLANS: UsagePlanName[] = ['standard', 'unlimited'];

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      account: { type: 'string' },
      stage: { type: 'string' },
      plan: { type: 'string', default: 'standard' },
      name: { type: 'string' },
      'key-file': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  if (!COMMANDS.includes(command)) throw new UsageError(`Unknown command '${command}'`);
  const plan = values.plan as UsagePlanName;
  if (!PLANS.includes(plan)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}`);
  const keyName = values.name === undefined ? undefined : keyNameOf(values.name);

  // Before any store is opened: a refused command changes nothing.
  const revocationTarget = command === 'revoke' ? await revocationTargetOf(rest, values) : undefined;
  const deployed = values.stage ? await useDeployedStage(values.stage) : undefined;
  const embedded = deployed ? undefined : await useLocalStore();
  try {
    if (command === 'create') {
      const account = requireAccount(values.account);
      const { key, record } = await createKey(account, { deployed, plan, name: keyName });
      process.stdout.write(`Created key ${record.keyId} for account '${account}'${deployed ? ` (usage plan ${plan})` : ''}. It is shown only this once:\n${key}\n`);
      return 0;
    }
    if (command === 'list') {
      const records = await listApiKeys(requireAccount(values.account));
      for (const record of records) {
        const state = record.revokedAt ? `revoked ${record.revokedAt}` : 'active';
        // Made before usage identifiers: its API Gateway key's value is the key itself.
        const exposed = record.apiGatewayKeyId && !record.usageIdentifier && !record.revokedAt ? '  held by API Gateway: replace it' : '';
        const label = record.name ? `  ${quotedName(record.name)}` : '';
        const madeBy = record.createdBy ? `  made by ${record.createdBy}` : '';
        process.stdout.write(`${record.keyId}${label}  created ${record.createdAt}${madeBy}  ${state}${record.usagePlan ? `  plan ${record.usagePlan}` : ''}${exposed}\n`);
      }
      if (records.length === 0) process.stdout.write('No keys.\n');
      return 0;
    }
    const target = revocationTarget!;
    const outcome = await revokeKey(target);
    if (!outcome) {
      process.stderr.write('key' in target ? 'No such key.\n' : `Account '${target.account}' has no key ${target.keyId}.\n`);
      return 1;
    }
    const cacheSeconds = values.stage ? stageSettings(values.stage).authorizerCacheTtlSeconds : runtimeConfig().authorizerCacheTtlSeconds;
    const within = cacheSeconds > 0 ? `within ${cacheSeconds} s (the authorizer cache: a key accepted in the last ${cacheSeconds} s is trusted until then)` : 'at once';
    const takesEffect = outcome.startsWith('Revoked') ? ` It stops working ${within}.` : '';
    process.stdout.write(`${outcome}${takesEffect}\n`);
    return 0;
  } finally {
    await embedded?.close();
  }
}

/**
 * The key id and account, or the key read from --key-file. A key given as an argument is refused:
 * it would be in the shell's history and in every process listing.
 */
async function revocationTargetOf(rest: string[], values: { account?: string; 'key-file'?: string }): Promise<RevocationTarget> {
  const keyFile = values['key-file'];
  if (keyFile !== undefined) {
    if (rest.length > 0) throw new UsageError('revoke takes either a key id (with --account) or --key-file, not both');
    const key = await keyFileArgument(keyFile);
    if (!isApiKeyForm(key)) throw new UsageError(`${keyFile === '-' ? 'stdin' : keyFile} does not hold a key (whk_ and 43 characters)`);
    return { key };
  }
  if (rest.length !== 1) throw new UsageError('revoke takes the id of the key (as keys list shows it) with --account, or --key-file');
  const keyId = rest[0]!;
  if (keyId.startsWith('whk_')) {
    const id = isApiKeyForm(keyId) ? `its id is ${apiKeyId(keyId)}: npm run keys -- revoke ${apiKeyId(keyId)} --account <its account>` : 'by its id (keys list --account <name>)';
    throw new UsageError(
      `A key on the command line ends up in your shell history and in process listings: treat this one as leaked and revoke it, ${id}; ` +
        'or give a key with --key-file <file> or --key-file - (stdin).',
    );
  }
  if (!API_KEY_ID_PATTERN.test(keyId)) throw new UsageError(`'${keyId}' is not a key id: 12 hex digits, as keys list shows them`);
  return { account: requireAccount(values.account), keyId };
}

/**
 * A key's name (an account's text) for the operator's terminal: quoted, and what could reorder or hide
 * the rest of the line (bidirectional overrides, zero-width characters, line separators) escaped.
 */
const quotedName = (keyName: string) => escapeHidden(JSON.stringify(keyName));

/** --name, as the API's `name` allows it. */
function keyNameOf(value: string): string {
  const parsed = name.safeParse(value);
  if (!parsed.success) throw new UsageError(`--name ${parsed.error.issues[0]!.message}`);
  return parsed.data;
}

function requireAccount(account: string | undefined): string {
  if (!account) throw new UsageError('--account <name> is required');
  return account;
}

async function useDeployedStage(stage: string): Promise<DeployedStage> {
  const deployed = await describeDeployedStage(stage);
  process.env.TABLE_NAME = deployed.tableName;
  process.env.STAGE = stage;
  delete process.env.DYNAMODB_ENDPOINT;
  delete process.env.DYNAMODB_PORT;
  say(`Using stage ${stage}: table ${deployed.tableName} in ${runtimeConfig().region}`);
  return deployed;
}

/**
 * Talks to the running server's store; opens the data directory itself when none is running. Says
 * which on stderr every time: a key made in another store than the server's is refused by it.
 */
async function useLocalStore(): Promise<EmbeddedDynamoDb | undefined> {
  // Read once DYNAMODB_PORT is settled: the configuration is read once per process.
  const tableName = () => runtimeConfig().tableName;
  const running = await useRunningStore();
  if (running.at === 'endpoint') {
    say(`Using DynamoDB at ${running.endpoint} (DYNAMODB_ENDPOINT), table ${tableName()}`);
    return undefined;
  }
  const { port } = running;
  if (running.at === 'port') {
    say(`Using the DynamoDB server on port ${port} (DYNAMODB_PORT), table ${tableName()}`);
    return undefined;
  }
  const dataDir = dataDirOf(process.env);
  const directory = path.join(dataDir, 'dynamodb');
  if ((await makeDataDirPrivate(dataDir)) > 0) say(`Made ${dataDir} private: its files and directories open to other users are now 0600 and 0700`);
  const credentialFile = await ensureStoreCredential(dataDir);
  const embedded = await startEmbeddedDynamoDb({
    port: 0,
    directory,
    credentialFile,
    owner: { pid: process.pid, name: 'the keys CLI' },
    // Most likely the server itself holds it, on a port other than the one looked at.
    whenInUse: 'stop it, or give this one its own DATA_DIR. If that is your server, set DYNAMODB_PORT to its DynamoDB port (npm start prints it)',
  });
  process.env.DYNAMODB_PORT = String(embedded.port);
  process.env.DYNAMODB_CREDENTIAL_FILE = credentialFile;
  say(`Nothing listens on port ${port} (DYNAMODB_PORT): using the data directory ${directory} (DATA_DIR), table ${tableName()}`);
  if ((await ensureTable(tableName())) === 'created') {
    say(
      `${directory} had no table yet, so this is not where your server keeps its data. ` +
        'Set DYNAMODB_PORT (the port npm start prints) or DATA_DIR to the ones your server uses.',
    );
  }
  return embedded;
}

/** What the CLI tells about itself goes to stderr: stdout holds only results (a new key is its last line). */
function say(line: string) {
  process.stderr.write(`${line}\n`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(usage ? `${(error as Error).message}\n(npm run keys -- --help lists the commands)\n` : `Error: ${(error as Error).message}\n`);
    process.exit(usage ? 2 : 1);
  },
);

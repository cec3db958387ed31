import './local/node-version-warning';
import './cli-output';
import { connect } from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_DYNAMODB_PORT, runtimeConfig } from '../lib/config/runtime';
import type { UsagePlanName } from '../lib/config/stages';
import { apiKeyId, assertAccountName, createApiKey, generateApiKey, listApiKeys, revokeApiKey } from '../lib/keys/api-keys';
import { createGatewayKey, deleteGatewayKey, describeDeployedStage, type DeployedStage } from './deployed-stage';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from './local/embedded-dynamodb';

const USAGE = `Usage:
  npm run keys -- create --account <name> [--stage <stage>] [--plan standard|unlimited]
      create a key (and the account, if new); the key is the last line printed
  npm run keys -- list --account <name> [--stage <stage>]
      list an account's keys (ids only: keys are never stored)
  npm run keys -- revoke <key> [--stage <stage>]
      revoke a key

Without --stage the store is found like npm start finds it: DYNAMODB_ENDPOINT (+ TABLE_NAME), else
DYNAMODB_PORT (default ${DEFAULT_DYNAMODB_PORT}); when nothing listens there, the data directory
(DATA_DIR, default ./.data) is opened directly.
With --stage, the stage deployed by \`cdk deploy -c stage=<stage>\` in the AWS account and region of
your AWS credentials: the key is also made an API Gateway API key under the stage's usage plan.`;

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

  const deployed = values.stage ? await useDeployedStage(values.stage) : undefined;
  const embedded = deployed ? undefined : await useLocalStore();
  try {
    if (command === 'create') {
      const account = requireAccount(values.account);
      assertAccountName(account);
      const key = generateApiKey();
      const gateway = deployed && {
        usagePlan: plan,
        apiGatewayKeyId: await createGatewayKey(deployed, plan, { value: key, name: `${account}-${apiKeyId(key)}` }),
      };
      const { record } = await createApiKey(account, { key, gateway }).catch(async (error: unknown) => {
        if (gateway) await deleteGatewayKey(gateway.apiGatewayKeyId);
        throw error;
      });
      process.stdout.write(`Created key ${record.keyId} for account '${account}'${gateway ? ` (usage plan ${plan})` : ''}. It is shown only this once:\n${key}\n`);
      return 0;
    }
    if (command === 'list') {
      const records = await listApiKeys(requireAccount(values.account));
      for (const record of records) {
        const state = record.revokedAt ? `revoked ${record.revokedAt}` : 'active';
        process.stdout.write(`${record.keyId}  created ${record.createdAt}  ${state}${record.usagePlan ? `  plan ${record.usagePlan}` : ''}\n`);
      }
      if (records.length === 0) process.stdout.write('No keys.\n');
      return 0;
    }
    if (rest.length !== 1) throw new UsageError('revoke takes the key to revoke');
    const revoked = await revokeApiKey(rest[0]!);
    if (!revoked) {
      process.stderr.write('No such key.\n');
      return 1;
    }
    const { record, alreadyRevoked } = revoked;
    if (alreadyRevoked) {
      process.stdout.write(`Key ${record.keyId} of account '${record.account}' was already revoked at ${record.revokedAt}.\n`);
      return 0;
    }
    if (record.apiGatewayKeyId) await deleteGatewayKey(record.apiGatewayKeyId);
    process.stdout.write(`Revoked key ${record.keyId} of account '${record.account}'.\n`);
    return 0;
  } finally {
    await embedded?.close();
  }
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
  if (process.env.DYNAMODB_ENDPOINT) {
    say(`Using DynamoDB at ${process.env.DYNAMODB_ENDPOINT} (DYNAMODB_ENDPOINT), table ${tableName()}`);
    return undefined;
  }
  const port = Number(process.env.DYNAMODB_PORT || DEFAULT_DYNAMODB_PORT);
  if (await isListening(port)) {
    process.env.DYNAMODB_PORT = String(port);
    say(`Using the DynamoDB server on port ${port} (DYNAMODB_PORT), table ${tableName()}`);
    return undefined;
  }
  const directory = path.join(process.env.DATA_DIR || '.data', 'dynamodb');
  const embedded = await startEmbeddedDynamoDb({
    port: 0,
    directory,
    owner: { pid: process.pid, name: 'the keys CLI' },
    // Most likely the server itself holds it, on a port other than the one looked at.
    whenInUse: 'stop it, or give this one its own DATA_DIR. If that is your server, set DYNAMODB_PORT to its DynamoDB port (npm start prints it)',
  });
  process.env.DYNAMODB_PORT = String(embedded.port);
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

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(usage ? `${(error as Error).message}\n\n${USAGE}\n` : `Error: ${(error as Error).message}\n`);
    process.exit(usage ? 2 : 1);
  },
);

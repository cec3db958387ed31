import { parseArgs } from 'node:util';
import { DEFAULT_DYNAMODB_PORT, runtimeConfig } from '../lib/config/runtime';
import { createApiKey, listApiKeys, revokeApiKey } from '../lib/keys/api-keys';
import { ensureTable, startEmbeddedDynamoDb, type EmbeddedDynamoDb } from './local/embedded-dynamodb';

const USAGE = `Usage:
  npm run keys -- create --account <name>   create a key (and the account, if new); the key is the last line
  npm run keys -- list --account <name>     list an account's keys (ids only; keys are never stored)
  npm run keys -- revoke <key>              revoke a key

The store is found like npm start finds it: DYNAMODB_ENDPOINT (+ TABLE_NAME), else DYNAMODB_PORT
(default ${DEFAULT_DYNAMODB_PORT}). When nothing listens there, the data directory (DATA_DIR, default ./.data)
is opened directly.`;

const COMMANDS = ['create', 'list', 'revoke'];

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { account: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  if (!COMMANDS.includes(command)) throw new UsageError(`Unknown command '${command}'`);
  const embedded = await connectToStore();
  try {
    switch (command) {
      case 'create': {
        const account = requireAccount(values.account);
        const { key, record } = await createApiKey(account);
        process.stdout.write(`Created key ${record.keyId} for account '${account}'. It is shown only this once:\n${key}\n`);
        return 0;
      }
      case 'list': {
        const records = await listApiKeys(requireAccount(values.account));
        for (const record of records) {
          process.stdout.write(`${record.keyId}  created ${record.createdAt}  ${record.revokedAt ? `revoked ${record.revokedAt}` : 'active'}\n`);
        }
        if (records.length === 0) process.stdout.write('No keys.\n');
        return 0;
      }
      case 'revoke': {
        if (rest.length !== 1) throw new UsageError('revoke takes the key to revoke');
        const record = await revokeApiKey(rest[0]!);
        if (!record) {
          process.stderr.write('No such key.\n');
          return 1;
        }
        process.stdout.write(`Revoked key ${record.keyId} of account '${record.account}'.\n`);
        return 0;
      }
    }
    return 2;
  } finally {
    await embedded?.close();
  }
}

class UsageError extends Error {}

function requireAccount(account: string | undefined): string {
  if (!account) throw new UsageError('--account <name> is required');
  return account;
}

/** Talks to the running server's store; opens the data directory itself when none is running. */
async function connectToStore(): Promise<EmbeddedDynamoDb | undefined> {
  if (process.env.DYNAMODB_ENDPOINT) return undefined;
  const port = Number(process.env.DYNAMODB_PORT || DEFAULT_DYNAMODB_PORT);
  if (await isListening(port)) {
    process.env.DYNAMODB_PORT = String(port);
    return undefined;
  }
  const embedded = await startEmbeddedDynamoDb({ port: 0, directory: `${process.env.DATA_DIR || '.data'}/dynamodb` });
  process.env.DYNAMODB_PORT = String(embedded.port);
  await ensureTable(runtimeConfig().tableName);
  return embedded;
}

async function isListening(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
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
    process.stderr.write(`${error instanceof UsageError ? `${error.message}\n\n${USAGE}` : `Error: ${(error as Error).message}`}\n`);
    process.exit(error instanceof UsageError ? 2 : 1);
  },
);

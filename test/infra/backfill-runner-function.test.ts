import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import type { Context } from 'aws-lambda';
import { handler } from '../../functions/run-backfills';
import { RUN_BACKFILLS } from '../../infra/chain-followers';
import { createBackfill } from '../../lib/backfills/backfills';
import { createBackfillBody } from '../../lib/schemas/backfills';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { getBackfill } from '../../lib/store/backfills';
import { moveCheckpoint } from '../../lib/store/chains';
import { dynamoDb, tableName } from '../../lib/store/client';
import { getItem } from '../../lib/store/items';
import { chainBackfillLeaseKey, GSI1, GSI2 } from '../../lib/store/table';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { useDevChain } from '../support/dev-chain';
import { useEmbeddedStore } from '../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../support/factories';

const CHAIN_ID = '43114';
const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/webhooks-dev-deliveries';
const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:webhooks-dev-chain-43114-rpc-url';
// The stage's C-Chain backfill runner, pointed by its secret at a local anvil that calls itself 43114.
const chain = useDevChain(CHAIN_ID);
useEmbeddedStore({ DELIVERY_QUEUE_URL: QUEUE_URL, CHAIN_ID, CHAIN_RPC_URL_SECRET_ARN: SECRET_ARN });
const secrets = mockClient(SecretsManagerClient);
const sqs = mockClient(SQSClient);

/** The table actions the handler sent while `recording`, as IAM names them, with the index of each Query. */
const sent: { action: string; indexName?: string }[] = [];
let recording = false;

beforeAll(() => {
  // Before the client's first call of each command: it resolves its middleware stack once per command.
  dynamoDb().middlewareStack.add(
    (next, context) => async (args) => {
      const { IndexName } = args.input as { IndexName?: string };
      if (recording) sent.push({ action: `dynamodb:${context.commandName!.replace(/Command$/, '')}`, ...(IndexName ? { indexName: IndexName } : {}) });
      return next(args);
    },
    { step: 'initialize', name: 'backfillRunnerActions' },
  );
});

beforeEach(() => {
  secrets.reset();
  secrets.on(GetSecretValueCommand, { SecretId: SECRET_ARN }).callsFake(() => ({ SecretString: chain.rpcUrl() }));
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
});

/** Invokes the handler with this much time left, recording the table actions it sends; resolves with how long it ran (ms). */
async function invoke(remainingMs: number): Promise<number> {
  const started = Date.now();
  recording = true;
  try {
    await handler({}, { getRemainingTimeInMillis: () => remainingMs } as unknown as Context);
  } finally {
    recording = false;
  }
  return Date.now() - started;
}

const queuedMessages = () =>
  sqs.commandCalls(SendMessageBatchCommand).flatMap((call) => call.args[0].input.Entries!.map((entry) => JSON.parse(entry.MessageBody!)));

test('ends at once, without taking the backfill lease, when the chain has no running backfill', async () => {
  // Without the check, a run with a minute left would work for 45 s, past this test's timeout.
  expect(await invoke(60_000)).toBeLessThan(2_000);
  expect(await getItem({ TableName: tableName(), Key: chainBackfillLeaseKey(CHAIN_ID) })).toBeUndefined();
  expect(sent.map(({ action }) => action)).toEqual(['dynamodb:Query']);
  // The RPC URL came from the secret, read once per process.
  expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(1);
}, 5_000);

test("runs the chain's backfill to its end, queues its notifications, gives the lease up before the deadline, and sends only the table actions its role grants", async () => {
  const to = randomAddress();
  const from = await chain.fundedAddress();
  const receipts = [await chain.send({ from, to, value: 1n }), await chain.send({ from, to, value: 2n })];
  const head = await chain.rpc<{ number: string; hash: string }>('eth_getBlockByNumber', ['latest', false]);
  const checkpoint = { number: Number(head.number), hash: head.hash };
  await moveCheckpoint(CHAIN_ID, undefined, { ...checkpoint, recent: [checkpoint] });
  const account = randomAccount();
  const webhook = await createWebhook(account, createWebhookBody.parse(webhookInput({ chainId: CHAIN_ID, metadata: { addresses: [to] } })));
  const backfill = await createBackfill(account, webhook.id, createBackfillBody.parse({ fromBlock: 0 }));
  sent.length = 0;

  // 32 s left less the handler's 30 s margin: no new run after 2 s.
  expect(await invoke(32_000)).toBeLessThan(5_000);
  expect(await getBackfill(account, webhook.id, backfill.backfillId)).toMatchObject({ status: 'completed', nextBlock: checkpoint.number + 1, notifications: 2 });
  expect(queuedMessages()).toEqual(receipts.map(() => expect.objectContaining({ account, webhookId: webhook.id, messageId: expect.any(String) })));
  expect(await getItem({ TableName: tableName(), Key: chainBackfillLeaseKey(CHAIN_ID) })).toMatchObject({ holder: '', until: 0 });

  const actions = new Set(sent.map(({ action }) => action));
  expect([...actions].filter((action) => !RUN_BACKFILLS.tableActions.includes(action as never))).toEqual([]);
  // The stack grants Query on the table, gsi1 and gsi2 (infra/webhooks-stack.ts).
  const indexes = new Set(sent.flatMap(({ indexName }) => (indexName ? [indexName] : [])));
  expect([...indexes].filter((index) => index !== GSI1.indexName && index !== GSI2.indexName)).toEqual([]);
  // What the run must have sent, so that the checks above had something to check.
  expect([...actions]).toEqual(expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query', 'dynamodb:BatchGetItem']));
  expect([...indexes].sort()).toEqual([GSI1.indexName, GSI2.indexName]);
}, 20_000);

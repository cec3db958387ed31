import { consumeDeliveries } from '../../../lib/deliveries/consumer';
import { prepareDelivery } from '../../../lib/deliveries/deliver';
import { recordNotifications } from '../../../lib/deliveries/messages';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { generateOrRotateSharedSecret } from '../../../lib/secrets/shared-secret';
import { dynamoDb } from '../../../lib/store/client';
import { originOf } from '../../../lib/store/endpoint-health';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';
import { queueRecordOf } from '../../support/queue-records';
import { startReceiver } from '../../support/receiver';

useEmbeddedStore();

interface Read {
  command: string;
  consistent: boolean;
  sortKeys: string[];
}
const reads: Read[] = [];

beforeAll(() => {
  // Before the client's first call of each command: it resolves its middleware stack once per command.
  dynamoDb().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: { sk: { S: string } }; ConsistentRead?: boolean; RequestItems?: Record<string, { Keys?: Array<{ sk: { S: string } }>; ConsistentRead?: boolean }> };
      if (context.commandName === 'GetItemCommand') reads.push({ command: 'GetItem', consistent: input.ConsistentRead === true, sortKeys: [input.Key!.sk.S] });
      if (context.commandName === 'BatchGetItemCommand') {
        for (const { Keys = [], ConsistentRead } of Object.values(input.RequestItems ?? {})) {
          reads.push({ command: 'BatchGetItem', consistent: ConsistentRead === true, sortKeys: Keys.map((key) => key.sk.S) });
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'prepareReadsTest' },
  );
});

async function recorded(origin?: string) {
  const account = randomAccount();
  await generateOrRotateSharedSecret(account);
  const webhook = await createWebhook(account, webhookInput({ url: 'https://receiver.example.com/hooks', metadata: { addresses: [randomAddress()] } }) as never);
  const [messageId] = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: { transaction: {} } }], NO_QUEUE, origin);
  return { account, webhookId: webhook.id, messageId: messageId!, origin };
}

const strongly = () => reads.filter((read) => read.consistent).flatMap((read) => read.sortKeys);
const eventually = () => reads.filter((read) => !read.consistent).flatMap((read) => read.sortKeys);

it("reads the message's state strongly consistent, and its body, its webhook, the account's secret and the endpoint's health eventually consistent, in one request", async () => {
  const ref = await recorded('https://receiver.example.com');
  reads.length = 0;
  expect((await prepareDelivery(ref, NO_QUEUE)).kind).toBe('ready');
  expect(strongly()).toEqual([`MESSAGE#${ref.messageId}`]);
  expect(reads.filter((read) => !read.consistent)).toHaveLength(1);
  expect(eventually().sort()).toEqual([`B#${ref.messageId}`, 'HEALTH', 'SECRET', `WEBHOOK#${ref.webhookId}`]);
});

it("reads the endpoint's health after the webhook when the queue message does not name its origin, or names one the URL has left", async () => {
  for (const origin of [undefined, 'https://old.example.com']) {
    const ref = await recorded(origin);
    reads.length = 0;
    const prepared = await prepareDelivery(ref, NO_QUEUE);
    if (prepared.kind !== 'ready') throw new Error('not ready');
    expect(prepared.delivery.origin).toBe('https://receiver.example.com');
    expect(reads.at(-1)).toEqual({ command: 'GetItem', consistent: false, sortKeys: ['HEALTH'] });
  }
});

it("reads the items a batch's records share once for the batch: the account's secret and endpoint, each webhook, beside each body", async () => {
  const receiver = await startReceiver();
  try {
    const account = randomAccount();
    await generateOrRotateSharedSecret(account);
    const webhooks = await Promise.all([0, 1].map(() => createWebhook(account, webhookInput({ url: receiver.url, metadata: { addresses: [randomAddress()] } }) as never)));
    const origin = originOf(receiver.url);
    const refs = (
      await Promise.all(webhooks.map(async (webhook) => (await recordNotifications(account, webhook.id, Array.from({ length: 5 }, () => ({ eventType: 'address_activity', event: {} })), NO_QUEUE, origin)).map((messageId) => ({ account, webhookId: webhook.id, messageId, origin }))))
    ).flat();
    reads.length = 0;
    const { batchItemFailures } = await consumeDeliveries(refs.map((ref) => queueRecordOf(ref)), { queue: NO_QUEUE });
    expect(batchItemFailures).toEqual([]);
    const shared = reads.filter((read) => !read.consistent);
    expect(shared).toHaveLength(1);
    expect(shared[0]!.sortKeys.sort()).toEqual([...refs.map((ref) => `B#${ref.messageId}`), 'HEALTH', 'SECRET', ...webhooks.map((webhook) => `WEBHOOK#${webhook.id}`)].sort());
  } finally {
    await receiver.close();
  }
});

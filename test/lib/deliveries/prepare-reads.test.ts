import { prepareDelivery } from '../../../lib/deliveries/deliver';
import { recordNotifications } from '../../../lib/deliveries/messages';
import { NO_QUEUE } from '../../../lib/deliveries/queue';
import { generateOrRotateSharedSecret } from '../../../lib/secrets/shared-secret';
import { dynamoDb } from '../../../lib/store/client';
import { createWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, randomAddress, webhookInput } from '../../support/factories';

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

it("reads the message's state strongly consistent, and its body, its webhook, the account's secret and the endpoint's health eventually consistent", async () => {
  const account = randomAccount();
  await generateOrRotateSharedSecret(account);
  const webhook = await createWebhook(account, webhookInput({ url: 'https://receiver.example.com/hooks', metadata: { addresses: [randomAddress()] } }) as never);
  const [messageId] = await recordNotifications(account, webhook.id, [{ eventType: 'address_activity', event: { transaction: {} } }], NO_QUEUE);
  reads.length = 0;
  const prepared = await prepareDelivery({ account, webhookId: webhook.id, messageId: messageId! }, NO_QUEUE);
  expect(prepared.kind).toBe('ready');
  const strong = reads.filter((read) => read.consistent).flatMap((read) => read.sortKeys);
  const eventual = reads.filter((read) => !read.consistent).flatMap((read) => read.sortKeys);
  expect(strong).toEqual([`MESSAGE#${messageId}`]);
  expect(eventual.sort()).toEqual([`B#${messageId}`, 'ENDPOINT_HEALTH', 'SECRET', `WEBHOOK#${webhook.id}`]);
});

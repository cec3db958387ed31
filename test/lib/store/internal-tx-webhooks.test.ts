import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { createWebhookBody, updateWebhookBody } from '../../../lib/schemas/webhook';
import { dynamoDb, tableName } from '../../../lib/store/client';
import { indexInternalTxWebhooks } from '../../../lib/store/layout-moves';
import { internalTxIndexMarkKey } from '../../../lib/store/table';
import { chainHasInternalTxWebhooks, getWebhookItem, webhookItem } from '../../../lib/store/webhooks';
import { createWebhook, deleteWebhook, updateWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, webhookInput } from '../../support/factories';

const CHAINS = ['43114', '43113'];
useEmbeddedStore();

const create = (account: string, chainId: string, includeInternalTxs: boolean) =>
  createWebhook(account, createWebhookBody.parse(webhookInput({ chainId, includeInternalTxs })));
const update = (account: string, id: string, changes: Record<string, unknown>) => updateWebhook(account, id, updateWebhookBody.parse(changes));

describe("a chain's blocks are traced while an active webhook on it asks for internal transactions", () => {
  test('created, deactivated, reactivated, changed and deleted, each moves it in or out of its chain', async () => {
    const [chainId, other] = CHAINS as [string, string];
    const account = randomAccount();
    await create(account, chainId, false);
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(false);
    const internal = await create(account, chainId, true);
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(true);
    expect(await chainHasInternalTxWebhooks(other)).toBe(false);
    await deleteWebhook(account, internal.id, { permanent: false });
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(false);
    await update(account, internal.id, { status: 'active' });
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(true);
    await update(account, internal.id, { includeInternalTxs: false });
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(false);
    // Asked for while inactive: traced once it is active again, not before.
    await update(account, internal.id, { status: 'inactive', includeInternalTxs: true });
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(false);
    await update(account, internal.id, { status: 'active' });
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(true);
    await deleteWebhook(account, internal.id, { permanent: true });
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(false);
  });

  test('concurrent changes of status and includeInternalTxs leave the index as the item ends', async () => {
    const [chainId] = CHAINS as [string];
    const account = randomAccount();
    const webhook = await create(account, chainId, false);
    for (let round = 0; round < 5; round += 1) {
      await Promise.all([update(account, webhook.id, { includeInternalTxs: round % 2 === 0 }), update(account, webhook.id, { status: round % 2 === 0 ? 'inactive' : 'active' })]);
      const item = (await getWebhookItem(account, webhook.id))!;
      expect(await chainHasInternalTxWebhooks(chainId)).toBe(item.status === 'active' && item.includeInternalTxs);
      await update(account, webhook.id, { status: 'inactive' });
    }
  });

  test("a table of an earlier version gets its webhooks that ask for internal transactions indexed, once", async () => {
    const chainId = '31337';
    const account = randomAccount();
    const created = await create(account, CHAINS[0]!, true);
    // As an earlier version wrote it: on another chain, and in no gsi2 partition.
    const { gsi2pk: _unindexed, ...earlier } = webhookItem(account, { ...created, id: crypto.randomUUID(), chainId }, 1) as unknown as Record<string, unknown>;
    const client = dynamoDb();
    await client.send(new PutItemCommand({ TableName: tableName(), Item: marshall(earlier, { removeUndefinedValues: true }) }));
    await client.send(new DeleteItemCommand({ TableName: tableName(), Key: marshall(internalTxIndexMarkKey) }));
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(false);
    expect(await indexInternalTxWebhooks(client, tableName(), { created: false })).toBe(1);
    expect(await chainHasInternalTxWebhooks(chainId)).toBe(true);
    // Marked done: not scanned again.
    expect(await indexInternalTxWebhooks(client, tableName(), { created: false })).toBe(0);
  });
});

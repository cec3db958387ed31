import type { WebhookStatus } from '../../../lib/schemas/fields';
import { createWebhookBody } from '../../../lib/schemas/webhook';
import { queryWebhooks } from '../../../lib/store/webhooks';
import { createWebhook, updateWebhook } from '../../../lib/webhooks/webhooks';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAccount, webhookInput } from '../../support/factories';

useEmbeddedStore();

const BATCH = 50;

/** Runs the tasks in parallel batches, in order. */
async function inBatches<T>(count: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += BATCH) {
    const size = Math.min(BATCH, count - start);
    results.push(...(await Promise.all(Array.from({ length: size }, (_, offset) => task(start + offset)))));
  }
  return results;
}

interface SeededAccount {
  account: string;
  /** Ids per status filter (undefined: all), newest first. */
  newestFirst: (status?: WebhookStatus) => string[];
}

/** An account holding `count` webhooks, those whose creation index `isInactive` picks made inactive. */
async function seedAccount(count: number, isInactive: (index: number) => boolean): Promise<SeededAccount> {
  const account = randomAccount();
  const webhooks = await inBatches(count, () => createWebhook(account, createWebhookBody.parse(webhookInput())));
  const inactive = new Set(webhooks.filter((_, index) => isInactive(index)).map((webhook) => webhook.id));
  const inactiveIds = [...inactive];
  await inBatches(inactiveIds.length, (index) => updateWebhook(account, inactiveIds[index]!, { status: 'inactive' }));
  // UUIDv7 ids sort by creation time: descending id order is newest first.
  const all = webhooks.map((webhook) => webhook.id).sort().reverse();
  return {
    account,
    newestFirst: (status) =>
      status === undefined ? all : all.filter((id) => (status === 'inactive') === inactive.has(id)),
  };
}

describe('queryWebhooks cost: one Query reading at most the page and one more item', () => {
  let crowded: SeededAccount;

  beforeAll(async () => {
    // 300 webhooks, 1% (3) inactive; a neighbouring account with webhooks of both statuses.
    crowded = await seedAccount(300, (index) => index === 5 || index === 150 || index === 290);
    await seedAccount(40, (index) => index % 2 === 0);
    expect(crowded.newestFirst('inactive')).toHaveLength(3);
    expect(crowded.newestFirst('active')).toHaveLength(297);
  }, 120_000);

  const statuses: (WebhookStatus | undefined)[] = [undefined, 'active', 'inactive'];
  const cases = statuses.flatMap((status) =>
    [10, 100].flatMap((pageSize) =>
      (['first', 'deep'] as const).map((page) => ({ status, pageSize, page, label: `status ${status ?? 'none'}, pageSize ${pageSize}, ${page} page` })),
    ),
  );

  /** Where the page starts in the newest-first list: the top, or deep in the list (after an id). */
  function startOf(ids: string[], page: 'first' | 'deep'): { afterId?: string; start: number } {
    if (page === 'first') return { start: 0 };
    // Half way down: a full page of 100 and one more still follow it (except for the 3 inactive).
    const afterIndex = Math.min(150, ids.length - 2);
    return { afterId: ids[afterIndex], start: afterIndex + 1 };
  }

  it.each(cases)('$label: exactly 1 request, at most pageSize+1 items read', async ({ status, pageSize, page }) => {
    const ids = crowded.newestFirst(status);
    const { afterId, start } = startOf(ids, page);
    const result = await queryWebhooks({ account: crowded.account, status, limit: pageSize + 1, afterId });
    expect(result.requests).toBe(1);
    expect(result.itemsRead).toBeLessThanOrEqual(pageSize + 1);
    expect(result.webhooks.map((webhook) => webhook.id)).toEqual(ids.slice(start, start + pageSize + 1));
  });

  it.each(statuses.map((status) => ({ status, label: status ?? 'none' })))('status $label: reads no item it does not return', async ({ status }) => {
    const result = await queryWebhooks({ account: crowded.account, status, limit: 11 });
    expect(result.itemsRead).toBe(result.webhooks.length);
  });

  it('returns only webhooks of the filtered status', async () => {
    const result = await queryWebhooks({ account: crowded.account, status: 'inactive', limit: 101 });
    expect(result.webhooks.map((webhook) => webhook.status)).toEqual(['inactive', 'inactive', 'inactive']);
    expect(result.itemsRead).toBe(3);
  });
});

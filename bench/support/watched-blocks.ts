import { randomBytes } from 'node:crypto';
import type { Hex } from '../../lib/chains/rpc-types';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { forEachChunk, writeItems } from '../../lib/store/batch';
import { headWrites, watcherWrites } from '../../lib/store/watch-index';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { randomAddress, TRANSACTION_KINDS, type PlannedTransaction } from './block-filler';

export interface WatchedWebhook {
  account: string;
  id: string;
  /** The address the blocks' matching transactions send to. */
  address: Hex;
  includeInternalTxs: boolean;
}

export interface WatchedSet {
  webhooks: WatchedWebhook[];
  /** One webhook of an account of its own, sent one transaction a block in the sustained part. */
  quiet: WatchedWebhook;
  /** `size` transactions, the three kinds in turn, every MATCHING_EVERY-th to a watched address. */
  plan: (size: number) => PlannedTransaction[];
  /** One transaction to each account's first webhook's address: every account's endpoint gets a notification. */
  onePerAccount: () => PlannedTransaction[];
}

/** Every tenth transaction of a block notifies one webhook; the others touch no watched address. */
export const MATCHING_EVERY = 10;
const INDEX_CHUNK = 10_000;
const SLICES_PER_CHUNK = 10;

/**
 * `accounts` × `webhooksPerAccount` webhooks created as the API creates them, each watching one
 * address the blocks send to; a third of them with `includeInternalTxs`, a third with
 * `includeLogs`. The watch index is then filled to `watchedTotal` addresses directly (as the chains
 * section's matcher part does), spread over the same webhooks: addresses no block touches, there
 * for the index's size.
 */
export async function watchedSet(
  chainId: string,
  url: string,
  { accounts, webhooksPerAccount, watchedTotal }: { accounts: number; webhooksPerAccount: number; watchedTotal: number },
  progress: (message: string) => void,
): Promise<WatchedSet> {
  const prefix = `bench-full-${randomBytes(3).toString('hex')}`;
  const accountNames = Array.from({ length: accounts }, (_, index) => `${prefix}-${index}`);
  const quietAccount = `${prefix}-quiet`;
  await forEachChunk([...accountNames, quietAccount], 1, 8, async ([account]) => void (await generateOrRotateSharedSecret(account!)));
  // Webhook i is in account i % accounts: webhooks created side by side are in different accounts.
  const specs = Array.from({ length: accounts * webhooksPerAccount }, (_, index) => ({ account: accountNames[index % accounts]!, address: randomAddress(), includeInternalTxs: index % 3 === 0, includeLogs: index % 3 === 1 }));
  const create = async ({ account, address, includeInternalTxs, includeLogs }: (typeof specs)[number]): Promise<WatchedWebhook> => {
    const webhook = await createWebhook(account, createWebhookBody.parse({ url, chainId, eventType: 'address_activity', metadata: { addresses: [address] }, includeInternalTxs, includeLogs }));
    return { account, id: webhook.id, address, includeInternalTxs };
  };
  const webhooks: WatchedWebhook[] = new Array(specs.length);
  await forEachChunk(specs.map((spec, index) => ({ spec, index })), 1, 8, async ([item]) => void (webhooks[item!.index] = await create(item!.spec)));
  const quiet = await create({ account: quietAccount, address: randomAddress(), includeInternalTxs: false, includeLogs: false });

  progress(`full blocks: ${webhooks.length + 1} webhooks created; filling the watch index to ${watchedTotal.toLocaleString('en-US')} addresses`);
  let owner = 0;
  for (let start = webhooks.length; start < watchedTotal; start += INDEX_CHUNK) {
    const addresses = Array.from({ length: Math.min(INDEX_CHUNK, watchedTotal - start) }, randomAddress);
    const slice = Math.ceil(addresses.length / SLICES_PER_CHUNK);
    const owners = Array.from({ length: SLICES_PER_CHUNK }, () => webhooks[owner++ % webhooks.length]!.id);
    await writeItems(owners.flatMap((id, index) => watcherWrites(chainId, id, addresses.slice(index * slice, (index + 1) * slice), 'add')));
    await writeItems(headWrites(chainId, addresses));
  }

  const traced = webhooks.filter((webhook) => webhook.includeInternalTxs);
  let nextAny = 0;
  let nextTraced = 0;
  return {
    webhooks,
    quiet,
    plan: (size) =>
      Array.from({ length: size }, (_, index) => {
        const kind = TRANSACTION_KINDS[index % TRANSACTION_KINDS.length]!;
        if (index % MATCHING_EVERY !== 0) return { kind, to: randomAddress() };
        // An internal transfer matches only a webhook that asks for internal transactions.
        const webhook = kind === 'internal' ? traced[nextTraced++ % traced.length]! : webhooks[nextAny++ % webhooks.length]!;
        return { kind, to: webhook.address };
      }),
    onePerAccount: () => webhooks.slice(0, accounts).map((webhook, index) => ({ kind: TRANSACTION_KINDS[index % 2]!, to: webhook.address })),
  };
}

import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { v7 as uuidv7 } from 'uuid';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { startDeliveryLoop } from '../../infra/local/delivery-loop';
import { runtimeConfig } from '../../lib/config/runtime';
import { stageSettings } from '../../lib/config/stages';
import { recordNotifications } from '../../lib/deliveries/messages';
import type { Webhook } from '../../lib/schemas/webhook';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { forEachChunk, writeItems } from '../../lib/store/batch';
import { dueIndexShards, messagePartitions } from '../../lib/store/table';
import { webhookItem } from '../../lib/store/webhooks';
import { uuidv7Time } from '../../lib/uuid';
import { originOf } from '../../lib/store/endpoint-health';
import { startDeliveryReceivers } from '../support/delivery-receivers';
import { PartitionMeter, type PartitionLoad } from '../support/partition-load';
import { isSlotPartition, SlotHolds, slotPartitionAt } from '../support/slot-load';
import { atMost, figure, type BenchOptions, type Figure } from '../support/report';
import { interceptDynamoDb } from '../support/store';

const SECTION = '10 keys';
/** DynamoDB's limits per partition (table or index), which adaptive capacity cannot lift for one key. */
const PARTITION_WCU = 1000;
const PARTITION_RCU = 3000;
const STAGE_RATES = [10_000, 100_000];
/** One webhook (of the largest account) gets this share of all notifications: a popular contract's watcher. */
const HOT_WEBHOOK_SHARE = 0.05;
/** One webhook in this many has a receiver that refuses connections: each of its notifications fails once and is scheduled again. */
const FAILING_EVERY = 100;
/**
 * The least an attempt holds its slots on AWS (docs/delivery-scale.md, "Slots"): the claim, the POST
 * and the record, three DynamoDB writes after the admission's own. The shorter the hold, the fewer
 * slots a rate needs and the hotter their partitions: the slots' figures take this or the mean
 * measured, whichever is shorter.
 */
const SHORTEST_HOLD_MS = 20;
/** Notifications recorded per block, grouped by webhook as the chain follower records them. */
const BLOCK = 200;

interface Target {
  account: string;
  webhook: Webhook;
  failing: boolean;
}

/** Account of rank r (from 1) weighs 1/r, its webhooks ceil(8/sqrt(r)), the k-th of them weighing 1/k: a few large accounts, many small. */
function stageShape(accounts: number, url: (where: string) => string, failingUrl: string): { targets: Target[]; pick: () => Target } {
  const targets: Target[] = [];
  const weights: number[] = [];
  for (let rank = 1; rank <= accounts; rank += 1) {
    const account = `keys-${String(rank).padStart(4, '0')}`;
    const count = Math.ceil(8 / Math.sqrt(rank));
    for (let k = 1; k <= count; k += 1) {
      const failing = targets.length % FAILING_EVERY === FAILING_EVERY - 1;
      const id = uuidv7();
      const webhook: Webhook = {
        id,
        url: failing ? failingUrl : url(`/hooks/${account}/${k}`),
        chainId: '43114',
        status: 'active',
        createdAt: uuidv7Time(id),
        name: 'keys',
        description: '',
        eventType: 'address_activity',
        metadata: { eventSignatures: [], addresses: ['0x00000000000000000000000000000000000000aa'] },
        includeInternalTxs: false,
        includeLogs: false,
      };
      targets.push({ account, webhook, failing });
      weights.push(1 / rank / k);
    }
  }
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const cumulative: number[] = [];
  weights.reduce((sum, weight) => (cumulative.push((sum + weight) / total), sum + weight), 0);
  const pick = () => {
    if (Math.random() < HOT_WEBHOOK_SHARE) return targets[0]!;
    const draw = Math.random();
    let low = 0;
    let high = cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (cumulative[middle]! < draw) low = middle + 1;
      else high = middle;
    }
    return targets[low]!;
  };
  return { targets, pick };
}

/** A loopback URL nothing listens on: attempts to it fail at once (connection refused). */
async function refusingUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/hooks/refused`;
}

/**
 * Replays the key pattern of a busy stage against the embedded store: notifications over a thousand
 * accounts (a few large, many small, one hot webhook, some failing receivers), recorded as the chain
 * follower records them and delivered by the delivery loop `npm start` runs, every DynamoDB request
 * counted per partition key of the table and its indexes. Each key's load per notification, scaled
 * to a stage's rate, is set against DynamoDB's per-partition limits (docs/delivery-scale.md).
 */
export async function keys({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const accounts = quick ? 200 : 1000;
  const notifications = quick ? 4_000 : 20_000;
  const receivers = await startDeliveryReceivers();
  try {
    const { targets, pick } = stageShape(accounts, receivers.healthyUrl, await refusingUrl());
    progress(`keys: ${accounts} accounts, ${targets.length} webhooks, ${notifications} notifications`);
    await writeItems(targets.map(({ account, webhook }) => ({ put: webhookItem(account, webhook, 1) })));
    await forEachChunk([...new Set(targets.map(({ account }) => account))], 1, 16, async ([account]) => void (await generateOrRotateSharedSecret(account!)));
    const event = (JSON.parse(readFileSync(path.join(__dirname, '../../test/fixtures/hosted-address-activity-example.json'), 'utf8')) as { event: unknown }).event;
    const expected = Array.from({ length: notifications }, pick);
    const toArrive = expected.filter(({ failing }) => !failing).length;
    let arrived = 0;
    receivers.onArrivals((ids) => void (arrived += ids.length));

    const meter = new PartitionMeter();
    const holds = new SlotHolds();
    interceptDynamoDb(async (command, input, send) => {
      try {
        const result = await send();
        meter.observe(command, input, result.output as Record<string, unknown>);
        holds.observe(command, input, true);
        return result;
      } catch (error) {
        meter.observe(command, input, undefined);
        holds.observe(command, input, false);
        throw error;
      }
    });
    const queue = newLocalDeliveryQueue();
    const loop = startDeliveryLoop(queue);
    try {
      for (let start = 0; start < expected.length; start += BLOCK) {
        const byWebhook = new Map<Target, number>();
        for (const target of expected.slice(start, start + BLOCK)) byWebhook.set(target, (byWebhook.get(target) ?? 0) + 1);
        await forEachChunk([...byWebhook], 1, 16, async ([entry]) => {
          const [{ account, webhook }, count] = entry!;
          const batch = Array.from({ length: count }, () => ({ eventType: 'address_activity', event }));
          await recordNotifications(account, webhook.id, batch, queue, originOf(webhook.url));
        });
      }
      const deadline = Date.now() + 180_000;
      while (arrived < toArrive && Date.now() < deadline) await sleep(100);
      await sleep(500);
    } finally {
      await loop.stop();
      interceptDynamoDb(undefined);
    }
    progress(`keys: ${arrived} of ${toArrive} delivered`);
    const hot = targets[0]!;
    const shares = { target: hot, count: expected.filter((target) => target === hot).length, accountCount: expected.filter(({ account }) => account === hot.account).length };
    return [...report(meter.partitions(), notifications, shares, progress), ...slotReport(meter.partitions(), holds, notifications)];
  } finally {
    await receivers.stop();
  }
}

/** The hot webhook, and how many of the notifications went to it and to its account. */
interface HotShares {
  target: Target;
  count: number;
  accountCount: number;
}

function report(loads: PartitionLoad[], notifications: number, hot: HotShares, progress: (message: string) => void): Figure[] {
  const name = (load: PartitionLoad) => `${load.index} ${load.partition.replace(hot.target.webhook.id, '<hot webhook>')}`;
  const total = (of: (load: PartitionLoad) => number, some = loads) => some.reduce((sum, load) => sum + of(load), 0);
  const each = (value: number) => value / notifications;
  const percent = (count: number) => `${Math.round((100 * count) / notifications)} %`;
  for (const load of loads.slice(0, 12)) progress(`keys:   ${name(load)}: ${load.writes} writes ${load.wcu} WCU, ${load.reads} reads ${load.rcu} RCU`);
  const figures: Figure[] = [
    figure(SECTION, 'item reads and writes per notification (table and indexes)', each(total((l) => l.writes + l.reads)), ''),
    figure(SECTION, 'WCU per notification (table and indexes)', each(total((l) => l.wcu)), 'WCU'),
    figure(SECTION, 'RCU per notification', each(total((l) => l.rcu)), 'RCU'),
  ];
  // The due-time index's shards are shared by every notification of the stage: their load grows with the stage's rate.
  const due = loads.filter((load) => load.index === 'gsi3' && load.partition.startsWith('DUE#'));
  if (due.length > 0) {
    const perNotification = each(total((l) => l.wcu, due));
    // The hottest shard's excess over the mean, as measured here, carried over to production's shard count.
    const skew = (due[0]!.wcu * due.length) / total((l) => l.wcu, due);
    const productionShards = stageSettings('prod').delivery.dueIndexShards;
    figures.push(figure(SECTION, 'gsi3 DUE# writes per notification', perNotification, 'WCU', undefined, `hottest of ${due.length} shards ${skew.toFixed(2)}x the mean`));
    for (const shards of [dueIndexShards(), productionShards]) {
      figures.push(figure(SECTION, `stage ceiling of ${shards} DUE# shards`, Math.round((PARTITION_WCU * shards) / perNotification / skew), 'notifications/s', undefined, 'the hottest shard at 1 000 WCU/s'));
    }
    for (const rate of STAGE_RATES) {
      const value = Math.round(((perNotification * rate) / productionShards) * skew);
      figures.push(figure(SECTION, `hottest of production's ${productionShards} DUE# shards at ${rate / 1000}k/s`, value, 'WCU/s', atMost(PARTITION_WCU)(value)));
    }
  }
  // Keys of one account or one webhook grow with its own rate: shown at the bench's shape (the hot webhook's share of the stage).
  // The slots' partitions do not (a pool keeping up with a higher rate has more of them): they have figures of their own (slotReport).
  // Nor do a destination's rate counters: its rate caps its attempts, whatever the stage's.
  const rates = loads.filter((load) => load.index === 'table' && load.partition.startsWith('RATE#'));
  const growing = loads.filter((load) => !isSlotPartition(load) && !rates.includes(load));
  if (rates.length > 0) {
    const perSecond = runtimeConfig().delivery.destinationRatePerSecond;
    figures.push(
      figure(SECTION, 'RATE# WCU per notification (the rate per destination)', Number(each(total((l) => l.wcu, rates)).toFixed(2)), 'WCU', undefined,
        `over ${rates.length} partitions, the hottest ${name(rates[0]!)} ${each(rates[0]!.wcu).toFixed(2)}; not scaled with the stage: every webhook of the run has the one loopback address, and a destination takes at most ${perSecond} attempts a second`),
    );
  }
  for (const index of ['table', 'gsi2']) {
    const hottest = growing.find((load) => load.index === index);
    if (!hottest) continue;
    const detail = `${name(hottest)}; the hot webhook at ${percent(hot.count)} of the stage, its account at ${percent(hot.accountCount)}; SLOTS# and RATE# partitions aside`;
    for (const rate of STAGE_RATES) figures.push(figure(SECTION, `hottest ${index} key at ${rate / 1000}k/s`, Math.round(each(hottest.wcu) * rate), 'WCU/s', undefined, detail));
  }
  const hotLog = new Set(messagePartitions(hot.target.account, hot.target.webhook.id));
  const hotMessages = loads.filter((load) => load.index === 'table' && hotLog.has(load.partition));
  if (hotMessages.length > 0 && hot.count > 0) {
    const total = hotMessages.reduce((sum, load) => sum + load.wcu, 0) / hot.count;
    const perHot = Math.max(...hotMessages.map((load) => load.wcu)) / hot.count;
    const skew = (perHot * hotLog.size) / total;
    figures.push(figure(SECTION, "one webhook: its log's WCU per notification, all partitions", Number(total.toFixed(2)), 'WCU', undefined, `over ${hotLog.size} partitions`));
    figures.push(figure(SECTION, 'one webhook: ceiling of its hottest log partition', Math.round(PARTITION_WCU / perHot), 'notifications/s', undefined, `1 000 WCU/s over that partition's ${perHot.toFixed(2)} WCU per notification, ${skew.toFixed(2)}x the mean`));
  }
  const accountItems = loads.find((load) => load.index === 'table' && load.partition === `ACCOUNT#${hot.target.account}`);
  if (accountItems && hot.accountCount > 0) {
    const perAccount = accountItems.rcu / hot.accountCount;
    figures.push(figure(SECTION, 'one account: RCU on its account partition per notification', Number(perAccount.toFixed(2)), 'RCU', undefined, 'its webhook items and its secret'));
    figures.push(figure(SECTION, 'one account: ceiling of its account partition', Math.round(PARTITION_RCU / perAccount), 'notifications/s', undefined, '3 000 RCU/s over its reads per notification'));
  }
  const hottestRead = [...growing].sort((a, b) => b.rcu - a.rcu)[0];
  if (hottestRead) {
    for (const rate of STAGE_RATES) {
      const value = Math.round(each(hottestRead.rcu) * rate);
      figures.push(figure(SECTION, `hottest read key at ${rate / 1000}k/s`, value, 'RCU/s', atMost(PARTITION_RCU)(value), `${name(hottestRead)}; that account at ${percent(hot.accountCount)} of the stage; SLOTS# and RATE# partitions aside`));
    }
  }
  return figures;
}

/**
 * The attempt slots' partitions. Scaled as the other keys are, a pool of the stage's capacity would
 * take a rate its slots cannot turn over (each is held for a whole attempt): production raises
 * `perAccount` and `perHost` with the rate, which adds partitions in proportion. So each pool's load
 * per notification is carried to the partitions of a pool sized for the rate (slot-load.ts).
 */
function slotReport(loads: PartitionLoad[], holds: SlotHolds, notifications: number): Figure[] {
  const pools = holds.pools(loads);
  if (pools.length === 0 || holds.holdsMs.length === 0) return [];
  const holdMs = Math.min(holds.meanHoldMs(), SHORTEST_HOLD_MS);
  const sorted = [...holds.holdsMs].sort((a, b) => a - b);
  const takes = pools.reduce((sum, pool) => sum + pool.takes, 0);
  const slotLoads = loads.filter(isSlotPartition);
  const { perAccount, perHost } = runtimeConfig().delivery.concurrency;
  const capacityOf = (pool: string) => (pool.startsWith('SLOTS#account#') ? perAccount : perHost);
  const share = (pool: (typeof pools)[number]) => `${Math.round((100 * pool.takes) / notifications)} %`;
  const figures: Figure[] = [
    figure(SECTION, 'slot held per attempt, mean', Number(holds.meanHoldMs().toFixed(1)), 'ms', undefined, `the figures below take ${holdMs.toFixed(0)} ms; p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, p99 ${sorted[Math.floor(sorted.length * 0.99)]!.toFixed(1)} ms, over ${sorted.length} slots taken and freed`),
    figure(SECTION, 'SLOTS# reads and writes per slot taken', Number((slotLoads.reduce((sum, l) => sum + l.reads + l.writes, 0) / takes).toFixed(2)), '', undefined, `${(slotLoads.reduce((sum, l) => sum + l.rcu, 0) / takes).toFixed(2)} RCU and ${(slotLoads.reduce((sum, l) => sum + l.wcu, 0) / takes).toFixed(2)} WCU; ${(takes / notifications).toFixed(2)} slots a notification`),
  ];
  for (const rate of STAGE_RATES) {
    const projected = pools.map((pool) => ({ pool, ...slotPartitionAt(pool, notifications, rate, holdMs, capacityOf(pool.pool)) }));
    for (const [units, limit] of [['rcu', PARTITION_RCU], ['wcu', PARTITION_WCU]] as const) {
      const hottest = projected.sort((a, b) => b[units] - a[units])[0]!;
      const raised = hottest.capacity > capacityOf(hottest.pool.pool) ? `${hottest.capacity} (raised from the stage's ${capacityOf(hottest.pool.pool)})` : `${hottest.capacity} (the stage's)`;
      const detail =
        `${hottest.pool.pool.replace(/^SLOTS#/, '')} (${share(hottest.pool)} of the notifications): its load per notification as measured over ${hottest.pool.partitions.length} partitions, the hottest's excess kept, ` +
        `over the ${hottest.partitions} partitions of 4 of a pool of ${raised} slots (its attempts a second × a hold of ${holdMs.toFixed(0)} ms); at that hold a partition's 4 slots turn over at most ${hottest.takesCeiling} times a second`;
      figures.push(figure(SECTION, `hottest SLOTS# partition at ${rate / 1000}k/s, pools sized for the rate`, hottest[units], units === 'rcu' ? 'RCU/s' : 'WCU/s', atMost(limit)(hottest[units]), detail));
    }
  }
  return figures;
}

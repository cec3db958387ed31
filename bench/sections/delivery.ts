import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { startDeliveryLoop } from '../../infra/local/delivery-loop';
import { runtimeConfig } from '../../lib/config/runtime';
import { recordNotifications } from '../../lib/deliveries/messages';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { originOf } from '../../lib/store/endpoint-health';
import { DeliveryFloor } from '../support/delivery-floor';
import { startDeliveryReceivers, type DeliveryReceivers } from '../support/delivery-receivers';
import { machineClockMs } from '../support/machine-clock';
import { closedLoop, NotificationRun, pacedLoop, pooled, type RecordNotification, type Target } from '../support/notification-load';
import { succeededCount } from '../support/recorded-messages';
import { processCpuMicros } from '../support/process-stats';
import { figure, type BenchOptions, type Figure } from '../support/report';

const SECTION = '7 delivery';
const THROUGHPUT_TARGET = 0.8;
const DEAD_HALF_THROUGHPUT_TARGET = 0.8;
const DEAD_HALF_P99_TARGET = 1.5;
/** Webhooks in each half: the kept half always points at the healthy receiver, the other half at it or at the dead one. */
const HALF = 10;
/** Answered notifications recorded or under way and not yet received, in the closed loop: enough to saturate both sides. */
const WINDOW = 128;
/** `npm start` runs its loop all along: a phase starts sending once the loop's first sweep has run. */
export const LOOP_SETTLE_MS = 250;
/** How long a paced run waits for its last notifications to arrive. */
export const PACED_GRACE_MS = 15_000;

/** The hosted API's documented address_activity event, with its unused topic left out as the spec asks. */
export function realisticEvent(): unknown {
  const example = JSON.parse(readFileSync(path.join(__dirname, '../../test/fixtures/hosted-address-activity-example.json'), 'utf8'));
  const event = example.event as { logs?: Array<Record<string, unknown>> };
  for (const log of event.logs ?? []) for (const [name, value] of Object.entries(log)) if (value === null) delete log[name];
  return event;
}

/** One side of the comparison: how it records a notification, and how a phase of it starts and ends. */
interface Side {
  name: string;
  record: RecordNotification;
  phase: (body: () => Promise<void>) => Promise<void>;
}

interface Round {
  run: NotificationRun;
  /** CPU microseconds during the round: this process, the store's, the receivers'. */
  cpu: { bench: number; store?: number; receiver?: number };
}

const fmt = (value: number) => Math.round(value).toLocaleString('en-US').replaceAll(',', ' ');
const ms = (micros: number) => `${(micros / 1000).toFixed(2)} ms`;
const cpuDelta = (pid: number, before: number | undefined) => {
  const after = processCpuMicros(pid);
  return before === undefined || after === undefined ? undefined : after - before;
};

/**
 * Sustained notifications per second to a loopback receiver, each durably recorded, through the
 * delivery loop `npm start` runs, against a floor making the same store requests and POSTs; latency
 * from recorded to received at half the saturating rate; and both again with half the webhooks
 * pointing at a receiver that never answers.
 */
export async function delivery({ quick, progress }: BenchOptions, store: { pid: number }): Promise<Figure[]> {
  const account = `bench-delivery-${randomBytes(3).toString('hex')}`;
  const event = realisticEvent();
  const receivers = await startDeliveryReceivers();
  const floor = new DeliveryFloor(account, event, runtimeConfig().delivery.concurrency.total);
  try {
    return await measure({ quick, progress, storePid: store.pid, account, event }, receivers, floor);
  } finally {
    floor.close();
    await receivers.stop();
  }
}

async function measure(
  { quick, progress, storePid, account, event }: BenchOptions & { storePid: number; account: string; event: unknown },
  receivers: DeliveryReceivers,
  floor: DeliveryFloor,
): Promise<Figure[]> {
  await generateOrRotateSharedSecret(account);
  const webhooks = async (kind: string, url: (where: string) => string, kept: boolean, answered: boolean): Promise<Target[]> => {
    const targets: Target[] = [];
    for (let index = 0; index < HALF; index += 1) {
      const input = { url: url(`/hooks/${kind}/${index}`), chainId: '43114', eventType: 'address_activity', metadata: { addresses: [`0x${randomBytes(20).toString('hex')}`] } };
      const webhook = await createWebhook(account, createWebhookBody.parse(input));
      targets.push({ webhookId: webhook.id, url: webhook.url, kept, answered });
    }
    return targets;
  };
  const kept = await webhooks('kept', receivers.healthyUrl, true, true);
  const other = await webhooks('other', receivers.healthyUrl, false, true);
  const dead = await webhooks('dead', receivers.deadUrl, false, false);
  const interleave = (a: Target[], b: Target[]) => a.flatMap((target, index) => [target, b[index]!]);
  const allHealthy = interleave(kept, other);
  const deadHalf = interleave(kept, dead);

  let current: NotificationRun | undefined;
  receivers.onArrivals((ids, times) => current?.arrived(ids, times));
  const newRun = () => (current = new NotificationRun());

  const queue = newLocalDeliveryQueue();
  const ours: Side = {
    name: 'ours',
    record: async (target) => (await recordNotifications(account, target.webhookId, [{ eventType: 'address_activity', event }], queue, originOf(target.url)))[0]!,
    phase: async (body) => {
      const loop = startDeliveryLoop(queue);
      await sleep(LOOP_SETTLE_MS);
      try {
        await body();
      } finally {
        // Stopping waits for the attempts under way: those on the dead receiver end when it drops them.
        let stopped = false;
        const stopping = loop.stop().finally(() => (stopped = true));
        while (!stopped) await Promise.race([stopping, receivers.cutDeadConnections().then(() => sleep(100))]);
      }
    },
  };
  const bare: Side = {
    name: 'floor',
    record: (target) => floor.record(target),
    phase: async (body) => {
      try {
        await body();
      } finally {
        await floor.idle();
      }
    },
  };

  const rounds = quick ? 2 : 4;
  const perRound = quick ? 1_000 : 4_000;
  const roundDeadlineMs = 120_000;
  const warmUp = quick ? 200 : 1000;
  const throughputRound = async (side: Side): Promise<Round> => {
    const [bench, store, receiver] = [process.cpuUsage(), processCpuMicros(storePid), processCpuMicros(receivers.pid)];
    const run = newRun();
    await side.phase(() => closedLoop(run, side.record, allHealthy, { count: perRound, window: WINDOW, deadline: machineClockMs() + roundDeadlineMs }));
    const used = process.cpuUsage(bench);
    return { run, cpu: { bench: used.user + used.system, store: cpuDelta(storePid, store), receiver: cpuDelta(receivers.pid, receiver) } };
  };

  progress(`delivery: warming up, ${warmUp} notifications on each side`);
  for (const side of [bare, ours]) {
    const run = newRun();
    await side.phase(() => closedLoop(run, side.record, allHealthy, { count: warmUp, window: WINDOW, deadline: machineClockMs() + roundDeadlineMs }));
  }

  const results: Record<'ours' | 'floor', Round[]> = { ours: [], floor: [] };
  for (let round = 0; round < rounds; round += 1) {
    // floor, ours, ours, floor, ...: drift between rounds hits both alike.
    for (const side of round % 2 ? [ours, bare] : [bare, ours]) {
      progress(`delivery: throughput round ${round + 1} of ${rounds}, ${side.name}: ${fmt(perRound)} notifications, closed loop with ${WINDOW} in flight`);
      const result = await throughputRound(side);
      results[side.name as 'ours' | 'floor'].push(result);
      progress(`delivery:   ${fmt(result.run.received / result.run.seconds)}/s`);
    }
  }
  const figures: Figure[] = [];
  const total = (side: Round[], count: (run: NotificationRun) => number) => side.reduce((sum, { run }) => sum + count(run), 0);
  const rate = (side: Round[], count: (run: NotificationRun) => number = (run) => run.received) => total(side, count) / side.reduce((sum, { run }) => sum + run.seconds, 0);
  const oursRate = rate(results.ours);
  const floorRate = rate(results.floor);
  const missing = total(results.ours, (run) => run.missing) + total(results.floor, (run) => run.missing);
  const roundRatios = results.ours.map(({ run }, index) => run.received / run.seconds / (results.floor[index]!.run.received / results.floor[index]!.run.seconds));
  figures.push(
    figure(
      SECTION,
      'notifications/s to one loopback receiver vs floor',
      oursRate / floorRate,
      'x',
      { target: `>= ${THROUGHPUT_TARGET}x`, pass: oursRate / floorRate >= THROUGHPUT_TARGET && missing === 0 },
      `ours ${fmt(oursRate)}/s, floor ${fmt(floorRate)}/s; ${fmt(perRound)} a round, ${rounds} rounds each (ratios ${Math.min(...roundRatios).toFixed(2)}-${Math.max(...roundRatios).toFixed(2)}), ${WINDOW} in flight${missing ? `; ${missing} never received` : ''}`,
    ),
  );
  figures.push(...cpuFigures(results));

  progress('delivery: counting the messages recorded as succeeded');
  let succeeded = 0;
  for (const { run } of results.ours) succeeded += await succeededCount(account, allHealthy, run.idRange!);
  const delivered = total(results.ours, (run) => run.received);
  figures.push(figure(SECTION, 'received and recorded as succeeded (ours)', succeeded, 'messages', { target: `= ${fmt(delivered)} received`, pass: succeeded === delivered }));

  // Latency at half the rate ours sustained, the same offered rate for every run, in rounds whose
  // order flips: a pause of the store's (a major collection takes tens of ms) lands on one run only.
  const pacedRate = Math.round(oursRate / 2);
  const pacedRounds = quick ? 1 : 3;
  const pacedSeconds = quick ? 2 : 5;
  const pacedRuns = { floor: [] as NotificationRun[], ours: [] as NotificationRun[], deadHalf: [] as NotificationRun[] };
  const pacedOrder = [
    { side: bare, targets: allHealthy, runs: pacedRuns.floor },
    { side: ours, targets: allHealthy, runs: pacedRuns.ours },
    { side: ours, targets: deadHalf, runs: pacedRuns.deadHalf },
  ];
  for (let round = 0; round < pacedRounds; round += 1) {
    for (const { side, targets, runs } of round % 2 ? [...pacedOrder].reverse() : pacedOrder) {
      const deadHalfNote = targets === deadHalf ? ', half the webhooks to the dead receiver' : '';
      progress(`delivery: latency round ${round + 1} of ${pacedRounds}, ${side.name}${deadHalfNote}: ${pacedRate}/s (half the rate ours sustained) for ${pacedSeconds} s`);
      const run = newRun();
      await side.phase(() => pacedLoop(run, side.record, targets, { rate: pacedRate, seconds: pacedSeconds, graceMs: PACED_GRACE_MS }));
      runs.push(run);
    }
  }
  const [oursPaced, floorPaced, deadPaced] = [pooled(pacedRuns.ours), pooled(pacedRuns.floor), pooled(pacedRuns.deadHalf)];
  for (const percentile of [50, 99]) {
    const [oursValue, floorValue] = [oursPaced, floorPaced].map(({ all }) => all.getValueAtPercentile(percentile));
    figures.push(
      figure(
        SECTION,
        `recorded to received p${percentile} at ${pacedRate}/s (half the saturating rate)`,
        oursValue! / 1000,
        'ms',
        undefined,
        `floor ${ms(floorValue!)} (ours ${(oursValue! / floorValue!).toFixed(2)}x); ${fmt(oursPaced.received)} received of ${fmt(oursPaced.answered)}${oursPaced.missing ? `, ${oursPaced.missing} not within ${PACED_GRACE_MS / 1000} s` : ''}`,
      ),
    );
  }

  // The dead half: the kept half as before, the other half pointing at a receiver that never answers.
  const [deadP99, healthyP99] = [deadPaced, oursPaced].map(({ kept }) => kept.getValueAtPercentile(99));
  const [deadP50, healthyP50] = [deadPaced, oursPaced].map(({ kept }) => kept.getValueAtPercentile(50));
  figures.push(
    figure(
      SECTION,
      `dead half: healthy half p99 at ${pacedRate}/s vs all healthy`,
      deadP99! / healthyP99!,
      'x',
      { target: `<= ${DEAD_HALF_P99_TARGET}x`, pass: deadP99! / healthyP99! <= DEAD_HALF_P99_TARGET && deadPaced.missing === 0 },
      `p99 ${ms(deadP99!)} vs ${ms(healthyP99!)}, p50 ${ms(deadP50!)} vs ${ms(healthyP50!)}; ${fmt(deadPaced.keptReceived)} received of ${fmt(deadPaced.answered)}${deadPaced.missing ? `, ${deadPaced.missing} not within ${PACED_GRACE_MS / 1000} s` : ''}`,
    ),
  );
  // For a time rather than a count, and judged on its last third: what waits for the dead half grows
  // with the time, and a healthy half that keeps its rate keeps it to the end.
  const deadSeconds = quick ? 6 : 36;
  progress(`delivery: ours, closed loop for ${deadSeconds} s with half the webhooks to the dead receiver`);
  const deadRun = newRun();
  await ours.phase(() => closedLoop(deadRun, ours.record, deadHalf, { count: Infinity, window: WINDOW, deadline: machineClockMs() + deadSeconds * 1000 }));
  const perSecond = Array.from({ length: deadSeconds }, (_, second) => deadRun.keptPerSecond[second] ?? 0);
  progress(`delivery:   healthy half received per second: ${perSecond.join(' ')}`);
  const keptBaselineRate = rate(results.ours, (run) => run.keptReceived);
  const lastThird = perSecond.slice((2 * deadSeconds) / 3).reduce((sum, count) => sum + count, 0) / (deadSeconds / 3);
  const lastSecond = perSecond.length - 1 - [...perSecond].reverse().findIndex((count) => count > 0);
  figures.push(
    figure(
      SECTION,
      'dead half: healthy half notifications/s, last third, vs all healthy',
      lastThird / keptBaselineRate,
      'x',
      { target: `>= ${DEAD_HALF_THROUGHPUT_TARGET}x`, pass: lastThird / keptBaselineRate >= DEAD_HALF_THROUGHPUT_TARGET },
      `${fmt(lastThird)}/s over the last ${deadSeconds / 3} s of ${deadSeconds}, ${fmt(deadRun.keptReceived / deadSeconds)}/s over all, vs ${fmt(keptBaselineRate)}/s (its share of the all-healthy rounds); ` +
        `${fmt(deadRun.produced - deadRun.answered)} sent to the dead half${lastSecond < deadSeconds - 1 ? `; none received after second ${lastSecond + 1}, with ${fmt(deadRun.unansweredBy(lastSecond + 1))} sent to the dead half by then` : ''}`,
    ),
  );
  return figures;
}

/** CPU per notification received: this process (the service or the floor), the store, and the receivers beside. */
function cpuFigures(results: Record<'ours' | 'floor', Round[]>): Figure[] {
  const per = (rounds: Round[], part: keyof Round['cpu']) => {
    const values = rounds.map((round) => round.cpu[part]);
    if (values.some((value) => value === undefined)) return undefined;
    return values.reduce((sum: number, value) => sum + value!, 0) / rounds.reduce((sum, { run }) => sum + run.received, 0);
  };
  const [oursBench, oursStore, oursReceiver] = (['bench', 'store', 'receiver'] as const).map((part) => per(results.ours, part));
  const [floorBench, floorStore, floorReceiver] = (['bench', 'store', 'receiver'] as const).map((part) => per(results.floor, part));
  const micros = (value: number | undefined) => (value === undefined ? '?' : `${value.toFixed(0)} µs`);
  const figures = [
    figure(SECTION, 'CPU per notification, this process (ours vs floor)', oursBench! / floorBench!, 'x', undefined, `ours ${micros(oursBench)}, floor ${micros(floorBench)}`),
  ];
  if (oursStore !== undefined && floorStore !== undefined) {
    figures.push(
      figure(
        SECTION,
        'CPU per notification, this process + store',
        (oursBench! + oursStore) / (floorBench! + floorStore),
        'x',
        undefined,
        `ours ${micros(oursBench)} + ${micros(oursStore)}, floor ${micros(floorBench)} + ${micros(floorStore)}; receiver ${micros(oursReceiver)} vs ${micros(floorReceiver)}`,
      ),
    );
  }
  return figures;
}

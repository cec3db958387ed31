import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { startDeliveryLoop } from '../../infra/local/delivery-loop';
import { recordNotifications, type Notification } from '../../lib/deliveries/messages';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { forEachChunk, writeItems } from '../../lib/store/batch';
import { webhookItem } from '../../lib/store/webhooks';
import { originOf } from '../../lib/store/endpoint-health';
import { takeAccountMessages, type AccountMessages } from '../support/account-messages';
import { CountingQueue } from '../support/counting-queue';
import { SkippingQueue } from '../support/skipping-queue';
import { startDeliveryReceivers, type DeliveryReceivers } from '../support/delivery-receivers';
import { NotificationRun, pacedLoop, pooled, type Target } from '../support/notification-load';
import { processCpuMicros } from '../support/process-stats';
import { instrumentDynamoDb } from '../support/store';
import { figure, type BenchOptions, type Figure } from '../support/report';
import { LOOP_SETTLE_MS, PACED_GRACE_MS as GRACE_MS, realisticEvent } from './delivery';

const SECTION = '11 noisy neighbour';
const P99_TARGET = 1.5;
const MAX_TARGET_MS = 2_000;
/** Account A: webhooks to a receiver that never answers, its backlog over them, and a burst to one fast receiver. */
const DEAD_WEBHOOKS = 20;
const BACKLOG = 1_000;
const BURST = 5_000;
/** Notifications a recordNotifications call of A's takes, and calls at once. */
const A_CALL = 50;
const A_PARALLEL = 8;
/** B's notifications per second, to its own fast receiver. */
const B_RATE = 20;
/**
 * Issue 48's stall: A's receivers at this many origins (each its own address) answer a wave of
 * notifications fast, then hang; A sends a second wave at each, all at once, one origin after the
 * other over B's run (recording them is what retrying them through the API does).
 */
const STALL_ORIGINS = 4;
const STALL_WAVE = 40;

/** A's load in a phase: none (B alone), recorded and delivered, recorded with its records acknowledged unread, or the stall's waves. */
type ALoad = 'none' | 'delivered' | 'recordedOnly' | 'stall';
const A_LOADS: ALoad[] = ['none', 'delivered', 'recordedOnly', 'stall'];
const aLoadText = `A's backlog of ${BACKLOG} to ${DEAD_WEBHOOKS} dead receivers and a burst of ${BURST}`;
const stallText = `A's waves of ${STALL_WAVE} at once to ${STALL_ORIGINS} origins answered fast, then hanging`;
const loadText: Record<ALoad, string> = { none: ', alone', delivered: `, with ${aLoadText}`, recordedOnly: `, with ${aLoadText} recorded, none delivered`, stall: `, with ${stallText}` };

interface Phase {
  run: NotificationRun;
  /** B's messages the consumer put off. */
  bPutOff: number;
  /** How long B's messages waited in the queue for a consumer (ms). */
  bWaits: number[];
  /** CPU of this process and of the store over the phase, in cores; the phase's length. */
  busy?: { bench: number; store: number; seconds: number; lagMaxMs: number };
  /** Account A's messages after the phase, and how many the consumer put off (queued again without an attempt). */
  a?: AccountMessages & { putOff: number; burstDelivered: number; deadAttempts: number };
}

const busyText = ({ busy }: Phase) => (busy ? `CPU over the phase's ${busy.seconds.toFixed(0)} s: this process ${busy.bench.toFixed(2)} cores (event loop delayed at most ${busy.lagMaxMs.toFixed(0)} ms), the store ${busy.store.toFixed(2)}` : '');
const busyRange = (phases: Phase[]) => {
  const values = phases.map(({ busy }) => busy?.store ?? NaN);
  return `${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)}`;
};
const waitText = (waits: number[]) => {
  const sorted = [...waits].sort((x, y) => x - y);
  const at = (share: number) => sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] ?? NaN;
  return `in the queue for a consumer p50 ${at(0.5).toFixed(0)} ms, p99 ${at(0.99).toFixed(0)} ms`;
};
const ms = (micros: number) => `${(micros / 1000).toFixed(1)} ms`;

/**
 * Account B's notifications, recorded at a steady rate to its own fast receiver, from recorded to
 * received: alone, while account A has a backlog to 20 dead receivers and a burst to a fast one, and
 * while A's receivers, answered fast at first, hang under its waves (issue 48's stall), through the
 * delivery loop `npm start` runs (the same consumer as the dispatcher function's) in this process.
 * The phases alternate round by round; each phase has fresh accounts and webhooks, its own queue
 * and loop, and deletes A's messages at its end (the endpoint health of A's dead webhooks, and their
 * pending messages, would otherwise carry into later phases).
 */
export async function noisyNeighbour({ quick, progress }: BenchOptions, store: { pid: number }): Promise<Figure[]> {
  // A's receivers (its dead ones and its burst's) and B's own, each in a process of their own.
  const receivers = await startDeliveryReceivers({ otherOrigins: STALL_ORIGINS });
  const bReceivers = await startDeliveryReceivers();
  const event = realisticEvent();
  let current: NotificationRun | undefined;
  bReceivers.onArrivals((ids, times) => current?.arrived(ids, times));
  let aArrived = 0;
  receivers.onArrivals((ids) => void (aArrived += ids.length));
  const rounds = quick ? 1 : 3;
  const seconds = quick ? 4 : 10;
  const phases: Record<ALoad, Phase[]> = { none: [], delivered: [], recordedOnly: [], stall: [] };
  try {
    for (let round = 0; round < rounds; round += 1) {
      for (const load of A_LOADS.map((_, index) => A_LOADS[(index + round) % A_LOADS.length]!)) {
        progress(`noisy: round ${round + 1} of ${rounds}, B at ${B_RATE}/s for ${seconds} s${loadText[load]}`);
        const cpu = { bench: process.cpuUsage(), store: processCpuMicros(store.pid), started: performance.now() };
        const requests = instrumentDynamoDb();
        const lag = monitorEventLoopDelay({ resolution: 10 });
        lag.enable();
        const phase = await runPhase({ a: receivers, b: bReceivers, aArrived: () => aArrived }, event, load, seconds, (run) => (current = run), progress);
        const wallMicros = (performance.now() - cpu.started) * 1000;
        const used = process.cpuUsage(cpu.bench);
        const storeUsed = (processCpuMicros(store.pid) ?? NaN) - (cpu.store ?? NaN);
        lag.disable();
        const byCommand = new Map<string, number>();
        for (const { command } of requests.calls) byCommand.set(command, (byCommand.get(command) ?? 0) + 1);
        progress(`noisy:   store requests (succeeded): ${[...byCommand].map(([command, count]) => `${command.replace(/Command$/, '')} ${count}`).join(', ')}`);
        requests.stop();
        phase.busy = { bench: (used.user + used.system) / wallMicros, store: storeUsed / wallMicros, seconds: wallMicros / 1e6, lagMaxMs: lag.max / 1e6 };
        phases[load].push(phase);
        const { all } = pooled([phase.run]);
        progress(`noisy:   B p50 ${ms(all.getValueAtPercentile(50))}, p99 ${ms(all.getValueAtPercentile(99))}, max ${ms(all.maxValue)}, ${phase.bPutOff} put off, ${waitText(phase.bWaits)}${phase.a ? `; A: ${phase.a.attempts} attempts, ${phase.a.putOff} put off, ${phase.a.burstDelivered} of the burst delivered` : ''}; ${busyText(phase)}`);
      }
    }
  } finally {
    await Promise.all([receivers.stop(), bReceivers.stop()]);
  }
  const roundP99s = (load: ALoad) => phases[load].map((phase, index) => pooled([phase.run]).all.getValueAtPercentile(99) / pooled([phases.none[index]!.run]).all.getValueAtPercentile(99));
  const roundText = (load: ALoad) => (rounds > 1 ? ` (round ratios ${Math.min(...roundP99s(load)).toFixed(2)}-${Math.max(...roundP99s(load)).toFixed(2)})` : '');
  const [alone, withA, recordedOnly, stalled] = [pooled(phases.none.map(({ run }) => run)), pooled(phases.delivered.map(({ run }) => run)), pooled(phases.recordedOnly.map(({ run }) => run)), pooled(phases.stall.map(({ run }) => run))];
  const [aloneP99, withP99] = [alone.all.getValueAtPercentile(99), withA.all.getValueAtPercentile(99)];
  const missing = alone.missing + withA.missing;
  const describe = (side: typeof alone) => `p50 ${ms(side.all.getValueAtPercentile(50))}, p99 ${ms(side.all.getValueAtPercentile(99))}, max ${ms(side.all.maxValue)}`;
  const sum = (count: (a: NonNullable<Phase['a']>) => number, load: ALoad = 'delivered') => phases[load].reduce((total, { a }) => total + count(a!), 0);
  const stallP99 = stalled.all.getValueAtPercentile(99);
  const stallDetail =
    `${describe(stalled)}; alone ${describe(alone)}; per round ${Math.round(sum((a) => a.deadAttempts, 'stall') / rounds)} attempts of A's to its hanging origins, ${Math.round(sum((a) => a.putOff, 'stall') / rounds)} of its messages put off; ` +
    `B's put off ${phases.stall.reduce((total, { bPutOff }) => total + bPutOff, 0)}, its wait ${waitText(phases.stall.flatMap(({ bWaits }) => bWaits))}; ${stalled.received} received over ${rounds} rounds${stalled.missing ? `; ${stalled.missing} never received within ${GRACE_MS / 1000} s` : ''}`;
  return [
    figure(
      SECTION,
      "B's p99 recorded to received, with A's load vs alone",
      withP99 / aloneP99,
      'x',
      { target: `<= ${P99_TARGET}x`, pass: withP99 / aloneP99 <= P99_TARGET && missing === 0 },
      `with A ${describe(withA)}; alone ${describe(alone)}; B's put off ${phases.delivered.reduce((total, { bPutOff }) => total + bPutOff, 0)} and ${phases.none.reduce((total, { bPutOff }) => total + bPutOff, 0)}; B's wait ${waitText(phases.delivered.flatMap(({ bWaits }) => bWaits))} with A, ${waitText(phases.none.flatMap(({ bWaits }) => bWaits)).replace('in the queue for a consumer ', '')} alone; ${withA.received} and ${alone.received} received over ${rounds} rounds of ${B_RATE}/s for ${seconds} s` +
        `${roundText('delivered')}${missing ? `; ${missing} never received within ${GRACE_MS / 1000} s` : ''}`,
    ),
    figure(
      SECTION,
      "B's p99 with A's notifications recorded, none delivered, vs alone",
      recordedOnly.all.getValueAtPercentile(99) / aloneP99,
      'x',
      undefined,
      `the floor under the first figure on this machine: A's backlog and burst recorded as above, and the loop acknowledging A's records unread, so B shares the CPU and the store only with A's recording; ${describe(recordedOnly)}${roundText('recordedOnly')}` +
        `${recordedOnly.missing ? `; ${recordedOnly.missing} never received within ${GRACE_MS / 1000} s` : ''}; ${busyText(phases.recordedOnly.at(-1)!)}`,
    ),
    figure(
      SECTION,
      "B's max recorded to received, with A's load",
      withA.all.maxValue / 1000,
      'ms',
      { target: `<= ${MAX_TARGET_MS} ms`, pass: withA.all.maxValue <= MAX_TARGET_MS * 1000 && withA.missing === 0 },
      `alone ${ms(alone.all.maxValue)}; the store's CPU over the phases with A ${busyRange(phases.delivered)} cores, alone ${busyRange(phases.none)}`,
    ),
    figure(SECTION, `B's p99 recorded to received, with ${stallText}`, stallP99 / 1000, 'ms', { target: `<= ${MAX_TARGET_MS} ms`, pass: stallP99 <= MAX_TARGET_MS * 1000 && stalled.missing === 0 }, stallDetail),
    figure(SECTION, "B's p99 with A's waves at hanging origins vs alone", stallP99 / aloneP99, 'x', { target: `<= ${P99_TARGET}x`, pass: stallP99 / aloneP99 <= P99_TARGET && alone.missing + stalled.missing === 0 }, `the same rounds' phases${roundText('stall')}`),
    figure(SECTION, "B's max recorded to received, with A's waves at hanging origins", stalled.all.maxValue / 1000, 'ms', { target: `<= ${MAX_TARGET_MS} ms`, pass: stalled.all.maxValue <= MAX_TARGET_MS * 1000 && stalled.missing === 0 }, `alone ${ms(alone.all.maxValue)}; the store's CPU over the phases ${busyRange(phases.stall)} cores`),
    figure(
      SECTION,
      "A's attempts meanwhile",
      sum((a) => a.attempts) / rounds,
      'a round',
      undefined,
      `per round: ${Math.round(sum((a) => a.deadAttempts) / rounds)} of them to the dead receivers, ${Math.round(sum((a) => a.putOff) / rounds)} put off (queued again without an attempt), ${Math.round(sum((a) => a.burstDelivered) / rounds)} of the burst's ${BURST} delivered, ` +
        `${Math.round(sum((a) => a.messages) / rounds)} messages of A's in the table at the end`,
    ),
  ];
}

async function runPhase(
  { a: receivers, b: bReceivers, aArrived }: { a: DeliveryReceivers; b: DeliveryReceivers; aArrived: () => number },
  event: unknown,
  load: ALoad,
  seconds: number,
  track: (run: NotificationRun) => void,
  progress: (message: string) => void,
): Promise<Phase> {
  const tag = randomBytes(3).toString('hex');
  const webhook = async (account: string, url: string) =>
    (await createWebhook(account, createWebhookBody.parse({ url, chainId: '43114', eventType: 'address_activity', metadata: { addresses: [`0x${randomBytes(20).toString('hex')}`] } }))).id;
  const b = `bench-noisy-b-${tag}`;
  await generateOrRotateSharedSecret(b);
  const bUrl = bReceivers.healthyUrl(`/hooks/b-${tag}`);
  const bTarget: Target = { webhookId: await webhook(b, bUrl), url: bUrl, kept: true, answered: true };
  const a = `bench-noisy-a-${tag}`;
  const dead: string[] = [];
  let burstWebhook = '';
  const origins = new Map<string, string>([[bTarget.webhookId, originOf(bUrl)]]);
  const withA = load !== 'none';
  const stalling: string[] = [];
  if (load === 'stall') {
    await generateOrRotateSharedSecret(a);
    for (let index = 0; index < STALL_ORIGINS; index += 1) {
      // The API takes http:// only to 127.0.0.1 and localhost: the other loopback addresses, which
      // stand here for sites of their own on the internet, are written into the webhook's item.
      const url = receivers.warmThenHangUrl(index, STALL_WAVE, `/hooks/a-${tag}/${index}`);
      const created = await createWebhook(a, createWebhookBody.parse({ url: receivers.healthyUrl('/'), chainId: '43114', eventType: 'address_activity', metadata: { addresses: [`0x${randomBytes(20).toString('hex')}`] } }));
      await writeItems([{ put: webhookItem(a, { ...created, url }, 1) }]);
      stalling.push(created.id);
      origins.set(created.id, originOf(url));
    }
  } else if (withA) {
    await generateOrRotateSharedSecret(a);
    for (let index = 0; index < DEAD_WEBHOOKS; index += 1) {
      const url = receivers.deadUrl(`/hooks/a-${tag}/${index}`);
      dead.push(await webhook(a, url));
      origins.set(dead.at(-1)!, originOf(url));
    }
    const burstUrl = receivers.healthyUrl(`/hooks/a-${tag}/burst`);
    burstWebhook = await webhook(a, burstUrl);
    origins.set(burstWebhook, originOf(burstUrl));
  }
  const local = newLocalDeliveryQueue();
  const queue = new CountingQueue(local);
  const loop = startDeliveryLoop(load === 'recordedOnly' ? new SkippingQueue(queue, a) : queue);
  await sleep(LOOP_SETTLE_MS);
  const notifications = (count: number): Notification[] => Array.from({ length: count }, () => ({ eventType: 'address_activity', event }));
  const recordAll = (calls: Array<{ webhookId: string; count: number }>) =>
    forEachChunk(calls, 1, A_PARALLEL, async ([call]) => void (await recordNotifications(a, call!.webhookId, notifications(call!.count), queue, origins.get(call!.webhookId))));
  // B's receiver is known to answer fast, as an established account's is: one delivery before the phase.
  const warm = new NotificationRun();
  track(warm);
  await pacedLoop(warm, async (target) => (await recordNotifications(b, target.webhookId, notifications(1), queue, origins.get(target.webhookId)))[0]!, [bTarget], { rate: 1, seconds: 1, graceMs: GRACE_MS });
  let burst: Promise<void> = Promise.resolve();
  if (load === 'stall') {
    // The warming wave, answered, and its attempts recorded, before the origins hang.
    const before = aArrived();
    await recordAll(stalling.map((webhookId) => ({ webhookId, count: STALL_WAVE })));
    const deadline = Date.now() + 30_000;
    while (aArrived() - before < STALL_ORIGINS * STALL_WAVE && Date.now() < deadline) await sleep(50);
    await sleep(LOOP_SETTLE_MS);
    progress(`noisy:   A's ${STALL_ORIGINS} origins warmed (${aArrived() - before} answered)`);
    burst = (async () => {
      for (const [index, webhookId] of stalling.entries()) {
        if (index > 0) await sleep((seconds * 1000) / STALL_ORIGINS);
        await recordAll([{ webhookId, count: STALL_WAVE }]);
      }
    })();
  } else if (withA) {
    // The backlog first, then the burst while B's notifications are recorded.
    await recordAll(Array.from({ length: BACKLOG / A_CALL }, (_, index) => ({ webhookId: dead[index % DEAD_WEBHOOKS]!, count: A_CALL })));
    progress(`noisy:   A's backlog recorded`);
    burst = recordAll(Array.from({ length: BURST / A_CALL }, () => ({ webhookId: burstWebhook, count: A_CALL })));
  }
  const run = new NotificationRun();
  track(run);
  try {
    await pacedLoop(run, async (target) => (await recordNotifications(b, target.webhookId, notifications(1), queue, origins.get(target.webhookId)))[0]!, [bTarget], { rate: B_RATE, seconds, graceMs: GRACE_MS });
    progress(`noisy:   B's run done`);
    await burst;
    progress(`noisy:   A's burst recorded`);
  } finally {
    // Stopping waits for the attempts under way: those on the dead receiver end when it drops them.
    let stopped = false;
    const stopping = loop.stop().finally(() => (stopped = true));
    while (!stopped) await Promise.race([stopping, receivers.cutDeadConnections().then(() => sleep(100))]);
    local.close();
    progress(`noisy:   loop stopped`);
  }
  await takeAccountMessages(b, [bTarget.webhookId]);
  const bPutOff = queue.groups.get(b)?.putOff ?? 0;
  const bWaits = queue.groups.get(b)?.waits ?? [];
  if (!withA) return { run, bPutOff, bWaits };
  if (load === 'stall') {
    const counts = await takeAccountMessages(a, stalling);
    const answered = counts.byStatus.succeeded ?? 0;
    return { run, bPutOff, bWaits, a: { ...counts, putOff: queue.groups.get(a)?.putOff ?? 0, burstDelivered: answered, deadAttempts: counts.attempts - answered } };
  }
  const [burstCounts, deadCounts] = [await takeAccountMessages(a, [burstWebhook]), await takeAccountMessages(a, dead)];
  return {
    run,
    bPutOff,
    bWaits,
    a: {
      messages: burstCounts.messages + deadCounts.messages,
      attempts: burstCounts.attempts + deadCounts.attempts,
      byStatus: {},
      putOff: queue.groups.get(a)?.putOff ?? 0,
      burstDelivered: burstCounts.byStatus.succeeded ?? 0,
      deadAttempts: deadCounts.attempts,
    },
  };
}

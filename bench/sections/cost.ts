import { randomBytes } from 'node:crypto';
import { localLogger } from '../../infra/local/local-logger';
import { newLocalDeliveryQueue } from '../../infra/local/background-work';
import { runtimeConfig } from '../../lib/config/runtime';
import { stageSettings } from '../../lib/config/stages';
import { consumeDeliveries } from '../../lib/deliveries/consumer';
import { recordNotifications } from '../../lib/deliveries/messages';
import { CONSUMER_BATCH_SIZE } from '../../lib/deliveries/queue';
import { deliveryStats } from '../../lib/deliveries/stats';
import { forEachChunk } from '../../lib/store/batch';
import { STATS_COUNTS_UPDATE_START } from '../../lib/store/delivery-stats';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { generateOrRotateSharedSecret } from '../../lib/secrets/shared-secret';
import { originOf } from '../../lib/store/endpoint-health';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { CapacityMeter } from '../support/capacity';
import { CountingQueue } from '../support/counting-queue';
import { startDeliveryReceivers } from '../support/delivery-receivers';
import { figure, median, type BenchOptions, type Figure } from '../support/report';
import { realisticEvent } from './delivery';

const SECTION = '12 cost';
/** Dollars per million notifications delivered on the first attempt. */
const COST_TARGET = 5;
/**
 * AWS on-demand prices in us-east-1 (dollars), before free tiers: bench/README.md ("Cost") has the
 * table with its sources and dates.
 */
const PRICES = {
  writeRequestUnit: 0.625 / 1e6,
  readRequestUnit: 0.125 / 1e6,
  sqsRequest: 0.4 / 1e6,
  lambdaRequest: 0.2 / 1e6,
  /** arm64, as the stack's functions run. */
  lambdaGbSecond: 0.0000133334,
};
/** Webhooks of the account, all to the one fast receiver (one endpoint, one origin): a batch mixes them. */
const WEBHOOKS = 10;
/** Notifications recorded at once (each its own recordNotifications call, as the chain follower makes one per webhook and block). */
const RECORDING_PARALLEL = 8;
/** The request kind (CapacityMeter's: the command and its expression's first two words) of the statistics' writes. */
const STATS_WRITE_KIND = `UpdateItem ${STATS_COUNTS_UPDATE_START}`;

interface BatchRun {
  batches: number;
  /** Wall time of each consumer call (ms): one Lambda invocation's billed duration. */
  durations: number[];
}

/**
 * What a notification delivered on its first attempt costs on AWS, counted as the code makes its
 * requests: DynamoDB request units (with the GSIs' writes), SQS requests, and the dispatcher's Lambda
 * invocations and duration, then priced. The producer's recording is counted (its PutItem and its
 * SendMessageBatch); the API's and the chain follower's own Lambda time is not. The delivery
 * statistics' writes are counted as a busy dispatcher makes them: the consumer's own flushes, and
 * what its buffer still holds once the queue is empty, written before the meter stops.
 */
export async function cost({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const account = `bench-cost-${randomBytes(3).toString('hex')}`;
  const receivers = await startDeliveryReceivers();
  const arrived = new Set<string>();
  receivers.onArrivals((ids) => ids.forEach((id) => arrived.add(id)));
  const local = newLocalDeliveryQueue();
  const queue = new CountingQueue(local);
  const meter = new CapacityMeter();
  const event = realisticEvent();
  // As on AWS, where DynamoDB's TTL deletes finished messages: the embedded store's expiry entries are not written.
  const config = runtimeConfig();
  const storeDeletesExpiredItems = config.storeDeletesExpiredItems;
  config.storeDeletesExpiredItems = true;
  try {
    await generateOrRotateSharedSecret(account);
    const webhookIds: string[] = [];
    const origin = originOf(receivers.healthyUrl('/'));
    for (let index = 0; index < WEBHOOKS; index += 1) {
      const input = { url: receivers.healthyUrl(`/hooks/cost/${index}`), chainId: '43114', eventType: 'address_activity', metadata: { addresses: [`0x${randomBytes(20).toString('hex')}`] } };
      webhookIds.push((await createWebhook(account, createWebhookBody.parse(input))).id);
    }
    // As the chain follower records: one call per webhook, naming its endpoint.
    const recordOne = (webhookId: string) => recordNotifications(account, webhookId, [{ eventType: 'address_activity', event }], queue, origin);
    const record = async (count: number) => {
      const ids: string[] = [];
      const calls = Array.from({ length: count }, (_, index) => webhookIds[index % WEBHOOKS]!);
      await forEachChunk(calls, 1, RECORDING_PARALLEL, async ([webhookId]) => {
        ids.push(...(await recordOne(webhookId!)));
      });
      return ids;
    };
    // One batch at a time, as one Lambda invocation alone in its execution environment: received,
    // consumed, its records deleted, until the queue is empty; then the statistics left in its buffer are written.
    const consume = async (): Promise<BatchRun> => {
      const run: BatchRun = { batches: 0, durations: [] };
      for (;;) {
        const records = await queue.receive(CONSUMER_BATCH_SIZE, 0);
        if (records.length === 0) {
          await deliveryStats.flush(Date.now(), { all: true, log: localLogger });
          return run;
        }
        const started = performance.now();
        const { batchItemFailures } = await consumeDeliveries(records, { queue, log: localLogger });
        run.durations.push(performance.now() - started);
        run.batches += 1;
        const failed = new Set(batchItemFailures.map(({ itemIdentifier }) => itemIdentifier));
        await queue.acknowledge(records.filter((record) => !failed.has(record.messageId)));
      }
    };
    const waitForArrivals = async (ids: string[]) => {
      const deadline = Date.now() + 10_000;
      while (ids.some((id) => !arrived.has(id)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      return ids.filter((id) => arrived.has(id)).length;
    };

    // The endpoint's first delivery: it is not yet known to answer fast, so it takes slots and records its health.
    progress('cost: first delivery to a new endpoint (counted apart)');
    meter.start();
    const firstIds = await recordOne(webhookIds[0]!);
    await consume();
    const firstArrivals = await waitForArrivals(firstIds);
    meter.stop();
    if (firstArrivals < 1) throw new Error("cost: the endpoint's first delivery never arrived");
    const first = { ...meter.totals(), notifications: 1 };
    meter.reset();
    queue.reset();

    const perRound = quick ? 200 : 1_000;
    progress(`cost: counting ${perRound} notifications to endpoints known fast, recorded one a call, consumed in batches of ${CONSUMER_BATCH_SIZE}`);
    meter.start();
    const countedIds = await record(perRound);
    const counted = await consume();
    meter.stop();
    const countedArrivals = await waitForArrivals(countedIds);
    const units = meter.totals();
    const kinds = [...meter.kinds.entries()];
    const dynalite = { ...meter.dynalite };
    const sqs = { ...queue.counts };
    queue.reset();

    // Timed apart: the meter's own reads would lengthen every batch.
    const timedRounds = quick ? 1 : 3;
    const durations: number[] = [];
    let timedNotifications = 0;
    let timedArrivals = 0;
    for (let round = 0; round < timedRounds; round += 1) {
      progress(`cost: timing the consumer, round ${round + 1} of ${timedRounds}: ${perRound} notifications`);
      const ids = await record(perRound);
      const run = await consume();
      durations.push(...run.durations);
      timedNotifications += ids.length;
      timedArrivals += await waitForArrivals(ids);
    }

    const n = perRound;
    const per = (value: number) => value / n;
    const sqsRequests = sqs.sendRequests + sqs.receiveRequests - sqs.emptyReceives + sqs.deleteRequests;
    const billedMs = durations.reduce((sum, ms) => sum + Math.ceil(ms), 0) / timedNotifications;
    const memory = { prod: stageSettings('prod').lambdaMemoryMb, dev: stageSettings('dev').lambdaMemoryMb };
    const dollars = (memoryMb: number) => ({
      writes: per(units.wru) * PRICES.writeRequestUnit * 1e6,
      reads: per(units.rru) * PRICES.readRequestUnit * 1e6,
      sqs: per(sqsRequests) * PRICES.sqsRequest * 1e6,
      invocations: per(counted.batches) * PRICES.lambdaRequest * 1e6,
      duration: (billedMs / 1000) * (memoryMb / 1024) * PRICES.lambdaGbSecond * 1e6,
    });
    const total = (parts: Record<string, number>) => Object.values(parts).reduce((sum, value) => sum + value, 0);
    const prod = dollars(memory.prod);
    const dev = dollars(memory.dev);
    const allDelivered = countedArrivals === n && timedArrivals === timedNotifications && sqs.sentEntries === n;
    const money = (value: number) => `$${value.toFixed(value < 0.1 ? 3 : 2)}`;
    const fixed = (value: number) => value.toFixed(2);
    // The batch time at which the total reaches the target, the rest as counted: what real receivers and DynamoDB's latency may take.
    const batchesPerMillion = per(counted.batches) * 1e6;
    const breakEvenMs = ((COST_TARGET - (total(prod) - prod.duration)) / (batchesPerMillion * (memory.prod / 1024) * PRICES.lambdaGbSecond)) * 1000;

    const kindDetail = kinds
      .map(([kind, { requests, rru, wru, wruByIndex }]) => {
        const indexes = Object.entries(wruByIndex).map(([index, value]) => `${index} ${fixed(value / requests)}`).join(', ');
        return `${kind}: ${fixed(requests / n)}/n${rru ? `, ${fixed(rru / requests)} RRU each` : ''}${wru ? `, ${fixed(wru / requests)} WRU each${indexes ? ` (${indexes})` : ''}` : ''}`;
      })
      .join('; ');
    const gsiUnits = Object.values(units.wruByIndex).reduce((sum, value) => sum + value, 0);
    const statsWrites = kinds.filter(([kind]) => kind.startsWith(STATS_WRITE_KIND)).reduce((sum, [, { wru }]) => sum + wru, 0);
    const byIndex = Object.entries(units.wruByIndex).map(([index, value]) => `${index} ${fixed(per(value))}`).join(', ');
    const figures = [
      figure(SECTION, 'DynamoDB write request units per notification', per(units.wru), 'WRU', undefined, `of which GSIs: ${byIndex}; the delivery statistics' ${per(statsWrites).toFixed(3)} (${money(per(statsWrites) * PRICES.writeRequestUnit * 1e6)} a million); the table's share ${fixed(per(units.wru - gsiUnits))} (dynalite's own count of it: ${fixed(per(dynalite.write))}); by request: ${kindDetail}`),
      figure(SECTION, 'DynamoDB read request units per notification', per(units.rru), 'RRU', undefined, `${fixed(per(units.requests))} requests per notification (dynalite's own count: ${fixed(per(dynalite.read))} RRU)`),
      figure(
        SECTION,
        'SQS requests per notification',
        per(sqsRequests),
        'requests',
        undefined,
        `SendMessageBatch ${fixed(per(sqs.sendRequests))}, ReceiveMessage ${fixed(per(sqs.receiveRequests - sqs.emptyReceives))} (+${sqs.emptyReceives} empty), DeleteMessageBatch ${fixed(per(sqs.deleteRequests))}`,
      ),
      figure(
        SECTION,
        'dispatcher Lambda: invocations and billed ms per notification',
        per(counted.batches),
        'invocations',
        undefined,
        `${fixed(billedMs)} ms per notification; a batch of ${CONSUMER_BATCH_SIZE}: median ${fixed(median(durations))} ms, max ${fixed(Math.max(...durations))} ms (${durations.length} batches over ${timedRounds} rounds, loopback receiver and store)`,
      ),
      figure(
        SECTION,
        `modelled cost per million notifications (prod, ${memory.prod} MB arm64)`,
        total(prod),
        '$',
        { target: `<= $${COST_TARGET}`, pass: total(prod) <= COST_TARGET && allDelivered },
        `DynamoDB writes ${money(prod.writes)}, reads ${money(prod.reads)}, SQS ${money(prod.sqs)}, Lambda requests ${money(prod.invocations)}, duration ${money(prod.duration)}; ` +
          `dev (${memory.dev} MB) ${money(total(dev))}; ${breakEvenMs > 0 ? `the target holds while a batch takes under ${Math.round(breakEvenMs)} ms on AWS` : 'over the target before any Lambda time'}` +
          `${allDelivered ? '' : `; NOT ALL DELIVERED ON THE FIRST ATTEMPT: ${countedArrivals} of ${n}, ${timedArrivals} of ${timedNotifications} timed, ${sqs.sentEntries} queue entries`}`,
      ),
      figure(
        SECTION,
        'first delivery to a new endpoint: request units',
        (first.wru + first.rru) / first.notifications,
        'RU',
        undefined,
        `${fixed(first.wru / first.notifications)} WRU and ${fixed(first.rru / first.notifications)} RRU, ${fixed(first.requests / first.notifications)} requests (slots taken and released, its health recorded) against ${fixed(per(units.wru))} and ${fixed(per(units.rru))} once known fast`,
      ),
    ];
    return figures;
  } finally {
    config.storeDeletesExpiredItems = storeDeletesExpiredItems;
    meter.stop();
    local.close();
    await receivers.stop();
  }
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiCaller, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { runScript } from '../support/processes';
import { startReceiver, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';

const dataDirs = useTempDir('webhooks-noisy-neighbour-');

/**
 * Issue 32's noisy neighbour: A's dead webhooks and their backlog, then A's burst to a fast receiver;
 * B's notifications to its own fast receiver meanwhile, half while the backlog is being recorded and
 * half once all of it and part of the burst are queued ahead of them.
 */
const DEAD_WEBHOOKS = 20;
const DEAD_BACKLOG = 1_000;
const BURST = 5_000;
const B_PER_PHASE = 10;
const B_INTERVAL_MS = 100;
/** The loose bound: each of B's notifications arrives within this of being recorded. */
const B_BOUND_MS = 5_000;
/** Test notifications A keeps in flight through the API at once. */
const SENDERS = 16;
/**
 * B's first notifications go once this much of A's backlog is recorded: every attempt the delivery
 * loop can make at once would then hang on A's dead receivers for the attempt timeout (10 s), were
 * it not for the per-account and per-host caps.
 */
const BACKLOG_BEFORE_B = 50;
/**
 * B's second notifications go once this much of A's burst is recorded, behind A's whole backlog and
 * these in the queue (the queue's fairness between accounts is what they need), while the rest is
 * being recorded. The burst stops once B's have arrived: recording all of it through the API takes
 * over a minute on 2 cores.
 */
const BURST_BEFORE_B = 1_000;

/** A's dead receivers and its burst's receiver are two hosts (each with its own slots), as they would be on the internet. */
const DEAD_HOST = '::1';
const BURST_HOST = '127.0.0.1';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let running: NpmStart | undefined;
const receivers: Receiver[] = [];
stopAfterAll(() => running, () => receivers);

async function receiver(host: string, answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const started = await startReceiver(answer, host);
  receivers.push(started);
  return started;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await sleep(20);
}

/** Runs `work(i)` for i in [0, count), `concurrency` at a time, until `stopped()`. */
async function inParallel(count: number, concurrency: number, work: (index: number) => Promise<void>, stopped = () => false): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && !stopped()) await work(next++);
    }),
  );
}

it(
  "an account's dead receivers and burst do not hold up another account's notifications: each arrives within 5 s while the backlog is pending",
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    const limits = String(10 * (DEAD_BACKLOG + BURST));
    const env = {
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      MAX_TEST_NOTIFICATIONS_PER_MINUTE: limits,
      MAX_TEST_NOTIFICATIONS_PER_MINUTE_PER_ACCOUNT: limits,
      THROTTLE_RATE_LIMIT: limits,
      THROTTLE_BURST_LIMIT: limits,
    };
    running = await startNpmStart(env);
    const callA = apiCaller(() => running!.url, readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim());
    const keyB = await runScript('infra/keys-cli.ts', ['create', '--account', 'quiet-neighbour'], { DATA_DIR: dataDir, DYNAMODB_PORT: env.DYNAMODB_PORT });
    expect(keyB.code).toBe(0);
    const callB = apiCaller(() => running!.url, keyB.lastLine);

    const create = async (call: typeof callA, url: string) => {
      const created = await call('POST', '/v1/webhooks', { url, chainId: '31337', eventType: 'address_activity', metadata: { addresses: ['0x' + '33'.repeat(20)] } });
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const dead: string[] = [];
    for (let index = 0; index < DEAD_WEBHOOKS; index += 1) dead.push(await create(callA, (await receiver(DEAD_HOST, () => 'hang')).url));
    const fastA = await receiver(BURST_HOST);
    const burstWebhook = await create(callA, fastA.url);
    const fastB = await receiver('127.0.0.1');
    const quietWebhook = await create(callB, fastB.url);

    const sendTest = async (call: typeof callA, id: string) => {
      const sent = await call('POST', `/v1/webhooks/${id}/test`);
      expect(sent.status).toBe(202);
      return sent.body.messageId as string;
    };
    const recordedB = new Map<string, number>();
    /** B's notifications of one phase, and once they have arrived (or the bound is long past), each one's ms from its 202 to its arrival; null: it never arrived. */
    const notifyB = async () => {
      const ids: string[] = [];
      for (let index = 0; index < B_PER_PHASE; index += 1) {
        const messageId = await sendTest(callB, quietWebhook);
        recordedB.set(messageId, Date.now());
        ids.push(messageId);
        await sleep(B_INTERVAL_MS);
      }
      return async () => {
        await fastB.waitFor(recordedB.size, B_BOUND_MS + 10_000).catch(() => undefined);
        const arrivedAt = new Map(fastB.requests.map((request) => [(JSON.parse(request.body) as { messageId: string }).messageId, request.at]));
        return ids.map((id) => (arrivedAt.has(id) ? arrivedAt.get(id)! - recordedB.get(id)! : null));
      };
    };

    let backlogRecorded = 0;
    const backlog = inParallel(DEAD_BACKLOG, SENDERS, async (index) => {
      await sendTest(callA, dead[index % DEAD_WEBHOOKS]!);
      backlogRecorded += 1;
    });
    await Promise.race([until(() => backlogRecorded >= BACKLOG_BEFORE_B), backlog]);
    const firstPhase = await notifyB();
    await backlog;
    const whileBacklogRecorded = await firstPhase();

    let burstRecorded = 0;
    let burstStopped = false;
    const burst = inParallel(
      BURST,
      SENDERS,
      async () => {
        await sendTest(callA, burstWebhook);
        burstRecorded += 1;
      },
      () => burstStopped,
    );
    await Promise.race([until(() => burstRecorded >= BURST_BEFORE_B), burst]);
    const behindBacklogAndBurst = await (await notifyB())();

    // A's backlog is still pending: none of its dead webhooks' messages is settled.
    const pendingDead = await Promise.all(
      dead.map(async (id) => (await callA('GET', `/v1/webhooks/${id}/deliveries?status=pending&pageSize=100`)).body.deliveries.length as number),
    );
    const burstSoFar = { recorded: burstRecorded, arrived: fastA.requests.length };
    burstStopped = true;
    await burst;
    const pendingInAll = pendingDead.reduce((sum, count) => sum + count, 0);
    process.stdout.write(`noisy neighbour: ${JSON.stringify({ whileBacklogRecorded, behindBacklogAndBurst, burstSoFar, pendingDead: pendingInAll })}\n`);
    for (const latency of [...whileBacklogRecorded, ...behindBacklogAndBurst]) {
      expect(latency).not.toBeNull();
      expect(latency).toBeLessThanOrEqual(B_BOUND_MS);
    }
    expect(pendingDead).toEqual(Array(DEAD_WEBHOOKS).fill(DEAD_BACKLOG / DEAD_WEBHOOKS));
  },
  120_000,
);

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { jsonRpc as rpc } from '../support/dev-chain';
import { randomAddress } from '../support/factories';
import { mineFullBlock, prepareFullBlock, repeated, type FullBlock } from '../support/full-block';
import { apiCaller, devChainUrl, freePort, type NpmStart, startNpmStart, stopAfterAll } from '../support/npm-start';
import { logLines } from '../support/processes';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver';
import { useTempDir } from '../support/temp-dir';
import { until } from '../support/until';

const dataDirs = useTempDir('webhooks-full-block-after-kill-');
const TRANSFERS = 1000;
// Three webhooks of the dev account; the last five of the first's addresses are the second's too.
const WATCHED = [Array.from({ length: 10 }, randomAddress), Array.from({ length: 10 }, randomAddress), Array.from({ length: 5 }, randomAddress)];
const WEBHOOK_ADDRESSES = [WATCHED[0]!, [...WATCHED[1]!, ...WATCHED[0]!.slice(5)], WATCHED[2]!];
// Bounds that only a follower or delivery that cannot cope with the block meets; each failure says where it stopped.
const FIRST_NOTIFICATIONS_WITHIN_MS = 60_000;
const ALL_DELIVERED_WITHIN_MS = 60_000;
/** The receiver has seen this many of the block's notifications when npm start is killed. */
const KILLED_AFTER = 20;

let running: NpmStart | undefined;
let receiver: Receiver | undefined;
stopAfterAll(() => running, () => receiver);

/** The follower's and delivery's log lines that npm start printed, for a failure's message. */
const followerLines = (output: string) =>
  logLines(output)
    .filter((line: any) => /chain|block|node|trace|quarantine/i.test(String(line.message)))
    .slice(-30)
    .map((line) => JSON.stringify(line))
    .join('\n');

it(
  "SIGKILL of npm start while a 1 000-transaction block's notifications are delivered: after a restart each is recorded once and delivered, twice only if it was in flight at the kill",
  async () => {
    const dataDir = path.join(dataDirs(), 'data');
    // A lease of 3 s, so that the restart's follower takes over soon. Attempts keep their default
    // time: a shorter one counts this loaded machine's loopback receiver as slow, and paces it.
    const env = {
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      DEV_CHAIN_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      LEASE_SECONDS: '3',
    };
    receiver = await startReceiver();
    running = await startNpmStart(env);
    const call = apiCaller(() => running!.url, readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim());
    const webhookIds: string[] = [];
    for (const addresses of WEBHOOK_ADDRESSES) {
      const created = await call('POST', '/v1/webhooks', { url: receiver.url, chainId: '31337', eventType: 'address_activity', metadata: { addresses } });
      expect(created.status).toBe(201);
      webhookIds.push(created.body.id);
    }

    /** The webhook's whole delivery log, a page at a time. */
    const deliveryLog = async (webhookId: string) => {
      const entries: { messageId: string; status: string; transactionHash?: string; attempts: number }[] = [];
      for (let pageToken: string | undefined; ; ) {
        const { status, body } = await call('GET', `/v1/webhooks/${webhookId}/deliveries?pageSize=100${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`);
        if (status !== 200) throw new Error(`GET deliveries of ${webhookId}: ${status} ${JSON.stringify(body)}`);
        entries.push(...body.deliveries);
        if (!body.nextPageToken) return entries;
        pageToken = body.nextPageToken;
      }
    };
    /** Where the block's notifications are, for a failure's message: those received, and each webhook's recorded ones by status. */
    const progress = async () => {
      const logs = await Promise.all(webhookIds.map((webhookId) => deliveryLog(webhookId).catch((error: Error) => [{ status: `unreadable: ${error.message}` }])));
      const recorded = logs.map((entries) => {
        const byStatus: Record<string, number> = {};
        for (const { status } of entries) byStatus[status] = (byStatus[status] ?? 0) + 1;
        return byStatus;
      });
      return `the receiver has ${receiver!.requests.length} requests; recorded, by webhook and status: ${JSON.stringify(recorded)}`;
    };

    // One block of 1 000 transfers from 100 senders, to the watched addresses in turn.
    const recipients = WATCHED.flat();
    const setup = await prepareFullBlock(devChainUrl(running));
    const block: FullBlock = await mineFullBlock(
      devChainUrl(running),
      setup,
      Array.from({ length: TRANSFERS }, (_, index) => ({ kind: 'native' as const, to: recipients[index % recipients.length]! })),
    );
    const minedAt = Date.now();
    // Every (webhook, transaction) the block notifies.
    const expected = new Set(
      block.transfers.flatMap((transfer) =>
        webhookIds.filter((_, index) => WEBHOOK_ADDRESSES[index]!.includes(transfer.to)).map((webhookId) => `${webhookId}/${transfer.hash}`),
      ),
    );
    expect(expected.size).toBe(1200);

    // Killed while the block's notifications are being delivered (and perhaps recorded).
    const pairOf = (request: ReceivedRequest) => {
      const body = JSON.parse(request.body);
      return { messageId: body.messageId as string, header: request.headers['webhook-id'], pair: `${body.webhookId}/${body.event.transaction.txHash}` };
    };
    // What the receiver got, each request parsed once.
    const parsed: ReturnType<typeof pairOf>[] = [];
    const receivedSoFar = () => {
      for (let index = parsed.length; index < receiver!.requests.length; index += 1) parsed.push(pairOf(receiver!.requests[index]!));
      return parsed;
    };
    const ofTheBlock = () => receivedSoFar().filter(({ pair }) => expected.has(pair)).length;
    await until(
      `the receiver has ${KILLED_AFTER} of the ${expected.size} notifications of block ${block.number}`,
      FIRST_NOTIFICATIONS_WITHIN_MS,
      async () => ofTheBlock(),
      (count) => count >= KILLED_AFTER,
      20,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await progress()}\nnpm start's follower, last lines:\n${followerLines(running!.output())}`);
    });
    await running.killGroup();
    const killedOutput = running.output();
    running = undefined;
    // Everything the receiver has now came before the kill: the processes are gone.
    const beforeKill = [...receivedSoFar()];
    const killedAt = Date.now();

    running = await startNpmStart(env);
    // The dev chain keeps its blocks through a SIGKILL of npm start (docs/chain-follower.md): the block is still there.
    const afterRestart = await rpc(devChainUrl(running), 'eth_getBlockByNumber', [`0x${block.number.toString(16)}`, false]);
    if (afterRestart?.hash !== block.hash) throw new Error(`the dev chain came back without block ${block.number} as mined (${block.hash}): it has ${afterRestart?.hash ?? 'no block'} there`);

    // Each notification arrives...
    const receivedPairs = () => new Set(receivedSoFar().map(({ pair }) => pair));
    await until(
      `every one of the block's ${expected.size} notifications has arrived (killed ${killedAt - minedAt} ms after mining, ${beforeKill.length} received by then)`,
      ALL_DELIVERED_WITHIN_MS,
      async () => {
        const received = receivedPairs();
        return { received: received.size, missing: [...expected].filter((pair) => !received.has(pair)).slice(0, 5) };
      },
      ({ received }) => received >= expected.size,
      250,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await progress()}\nbefore the kill:\n${followerLines(killedOutput)}\nafter the restart:\n${followerLines(running!.output())}`);
    });

    // ... and is recorded once: one message per (webhook, transaction), in each webhook's delivery log, all delivered.
    const logs = await until(
      'every message of the block is delivered in its delivery log',
      30_000,
      () => Promise.all(webhookIds.map(deliveryLog)),
      (all) => all.every((entries) => entries.every((entry) => entry.status === 'succeeded')),
      500,
    );
    const logged = logs.flatMap((entries, index) => entries.map((entry) => ({ ...entry, pair: `${webhookIds[index]}/${entry.transactionHash}` })));
    expect({ recordedTwice: [...repeated(logged.map((entry) => entry.pair)).keys()] }).toEqual({ recordedTwice: [] });
    expect(new Set(logged.map((entry) => entry.pair))).toEqual(expected);

    // Received: only the block's messages, under the ids recorded, the header's id the body's.
    const received = receivedSoFar();
    const messageOf = new Map(logged.map((entry) => [entry.pair, entry.messageId]));
    expect(received.filter(({ pair, messageId, header }) => messageOf.get(pair) !== messageId || header !== messageId)).toEqual([]);
    // Twice only a message whose attempt the kill interrupted: one the receiver had before the kill
    // (docs/delivery.md: a process that dies during an attempt leaves its claim to run out, and the
    // attempt is made again); never more; any other exactly once.
    const inFlightAtKill = new Set(beforeKill.map(({ messageId }) => messageId));
    const counts = repeated(received.map(({ messageId }) => messageId));
    const unexpectedDuplicates = [...counts].filter(([messageId, count]) => count > 2 || !inFlightAtKill.has(messageId));
    expect({ unexpectedDuplicates }).toEqual({ unexpectedDuplicates: [] });
    expect(received.length).toBe(expected.size + [...counts.values()].reduce((sum, count) => sum + count - 1, 0));
  },
  // Past the sum of the bounded waits above (and two starts), so that a wait that fails says where it stopped.
  240_000,
);

import { randomBytes } from 'node:crypto';
import { addAddresses } from '../../lib/addresses/addresses';
import { findActiveWatchers } from '../../lib/addresses/watchers';
import { createWebhookBody } from '../../lib/schemas/webhook';
import { getWebhookAddressState, queryWebhookAddresses } from '../../lib/store/addresses';
import { writeItems, type ItemWrite } from '../../lib/store/batch';
import { webhookAddressKey, webhookPointerKey } from '../../lib/store/table';
import { headWrites, watcherWrites } from '../../lib/store/watch-index';
import { webhookItem } from '../../lib/store/webhooks';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { peakRssKiB, rssKiB } from '../support/process-stats';
import { figure, median, type BenchOptions, type Figure } from '../support/report';
import { benchWebhook, instrumentDynamoDb, type DynamoDbCall, type DynamoDbCounter } from '../support/store';

const SECTION = '6 addresses';
const CHAIN = '43114';
const ACCOUNT = 'bench-addresses';
const SHARED_ACCOUNT = 'bench-addresses-shared';
/** Addresses per add call: the API's limit per call. */
const PER_CALL = 10_000;
/** A lookup asks for this many addresses, of which WATCHED_ASKED (1 %) are watched. */
const ASKED = 5_000;
const WATCHED_ASKED = 50;
/** Lookups of distinct sets (first asks), then repeats of one of them. */
const LOOKUP_SETS = 5;
const REPEATS = 5;
const SHARED_WATCHERS = 10_000;
const PAGE_SIZE = 100;
/** The lookup's read budget: one batch read per 100 addresses asked, plus 5 (the inactive query and room). */
const LOOKUP_BATCH_READS = ASKED / 100 + 5;

const MIB = 1024 * 1024;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const fmt = (value: number) => value.toLocaleString('en-US').replaceAll(',', ' ');

function randomAddresses(count: number): string[] {
  const hex = randomBytes(count * 20).toString('hex');
  return Array.from({ length: count }, (_, index) => `0x${hex.slice(index * 40, index * 40 + 40)}`);
}

const webhookInput = (address: string) =>
  createWebhookBody.parse({ url: 'https://receiver.example.com/hooks', chainId: CHAIN, eventType: 'address_activity', metadata: { addresses: [address] } });

/** What the floor writes for a webhook's new addresses: the items an add writes, nothing else. */
function floorWrites(webhookId: string, addresses: string[]): ItemWrite[] {
  return [
    ...addresses.map((address) => ({ put: { ...webhookAddressKey(ACCOUNT, webhookId, address) } })),
    ...watcherWrites(CHAIN, webhookId, addresses, 'add'),
    ...headWrites(CHAIN, addresses),
  ];
}

/** The `count` largest addresses offered, ascending: where the last page of a webhook's addresses starts. */
class LargestAddresses {
  readonly values: string[] = [];
  constructor(private readonly count: number) {}
  offer(address: string) {
    if (this.values.length === this.count && address <= this.values[0]!) return;
    let low = 0;
    let high = this.values.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.values[middle]! < address) low = middle + 1;
      else high = middle;
    }
    this.values.splice(low, 0, address);
    if (this.values.length > this.count) this.values.shift();
  }
}

const SHORT_NAMES: Record<string, string> = {
  BatchWriteItemCommand: 'BatchWrite',
  BatchGetItemCommand: 'BatchGet',
  UpdateItemCommand: 'Update',
  PutItemCommand: 'Put',
  DeleteItemCommand: 'Delete',
  GetItemCommand: 'Get',
  QueryCommand: 'Query',
};

/** Requests and batch items by command, summed over calls. */
class Tally {
  readonly requests = new Map<string, number>();
  readonly batchItems = new Map<string, number>();
  add(calls: DynamoDbCall[]) {
    for (const call of calls) {
      const name = SHORT_NAMES[call.command] ?? call.command;
      this.requests.set(name, (this.requests.get(name) ?? 0) + 1);
      if (call.batchItems !== undefined) this.batchItems.set(name, (this.batchItems.get(name) ?? 0) + call.batchItems);
    }
  }
  count = (name: string) => this.requests.get(name) ?? 0;
  items = (name: string) => this.batchItems.get(name) ?? 0;
  /** The other requests, per call: "Update 2, Put 1, Delete 1". */
  others(calls: number) {
    return [...this.requests]
      .filter(([name]) => name !== 'BatchWrite' && name !== 'BatchGet')
      .map(([name, count]) => `${name} ${+(count / calls).toFixed(2)}`)
      .join(', ');
  }
  othersTotal = () => [...this.requests].filter(([name]) => name !== 'BatchWrite' && name !== 'BatchGet').reduce((sum, [, count]) => sum + count, 0);
}

/**
 * Watched addresses against the embedded store, through the product's own functions:
 * 1. adding 1 000 000 addresses (quick: 100 000) to one webhook in calls of 10 000, against a floor
 *    that batch-writes the same items for a second webhook, call by call in alternation;
 * 2. the matcher's lookup of 5 000 addresses of which 50 are watched, among those, and of an
 *    address that 10 000 webhooks watch;
 * 3. pages of 100 addresses at the start, middle and end of the 1 000 000.
 */
export async function addresses({ quick, progress }: BenchOptions, store: { pid: number }): Promise<Figure[]> {
  const counter = instrumentDynamoDb();
  try {
    return await measure(quick ? 10 : 100, counter, progress, store.pid);
  } finally {
    counter.stop();
  }
}

async function measure(calls: number, counter: DynamoDbCounter, progress: BenchOptions['progress'], storePid: number): Promise<Figure[]> {
  const figures: Figure[] = [];
  const total = calls * PER_CALL;

  // 1. Adds, ours and the floor's alternating call by call.
  const first = randomAddresses(PER_CALL);
  const ours = await createWebhook(ACCOUNT, webhookInput(first[0]!)); // created with the first call's first address, as the API requires one
  const floor = await createWebhook(ACCOUNT, webhookInput(randomAddresses(1)[0]!));
  const countBefore = (await getWebhookAddressState(ACCOUNT, ours.id))!.addressCount;
  const samplesPerCall = Math.ceil((2 * LOOKUP_SETS * WATCHED_ASKED) / calls);
  const samples: string[][] = [];
  const largest = new LargestAddresses(PAGE_SIZE + 1);
  const oursMs: number[] = [];
  const floorMs: number[] = [];
  const oursTally = new Tally();
  const floorTally = new Tally();
  let peakRss = process.memoryUsage().rss;
  const sampleRss = () => void (peakRss = Math.max(peakRss, process.memoryUsage().rss));
  const sampler = setInterval(sampleRss, 100);
  progress(`addresses: adding ${fmt(total)} addresses in ${calls} calls of ${fmt(PER_CALL)}, each followed by the floor's call (progress every 10 calls)`);
  const addStarted = performance.now();
  try {
    for (let call = 0; call < calls; call += 1) {
      const batch = call === 0 ? first : randomAddresses(PER_CALL);
      samples.push(batch.slice(0, samplesPerCall));
      for (const address of batch) largest.offer(address);
      counter.reset();
      let started = performance.now();
      await addAddresses(ACCOUNT, ours.id, { addresses: batch });
      oursMs.push(performance.now() - started);
      oursTally.add(counter.calls);

      const floorBatch = randomAddresses(PER_CALL);
      counter.reset();
      started = performance.now();
      await writeItems(floorWrites(floor.id, floorBatch));
      floorMs.push(performance.now() - started);
      floorTally.add(counter.calls);
      sampleRss();
      if ((call + 1) % 10 === 0 || call + 1 === calls) {
        progress(
          `addresses: ${call + 1}/${calls} calls (${fmt((call + 1) * PER_CALL)} addresses each side), median so far ${seconds(median(oursMs))} vs floor ${seconds(median(floorMs))} a call; ` +
            `RSS: bench ${Math.round(process.memoryUsage().rss / MIB)} MiB, store ${Math.round((await rssKiB(storePid)) / 1024)} MiB`,
        );
      }
    }
  } finally {
    clearInterval(sampler);
  }
  const addSeconds = (performance.now() - addStarted) / 1000;
  const countAfter = (await getWebhookAddressState(ACCOUNT, ours.id))!.addressCount;
  const added = countAfter - countBefore;
  const ratios = oursMs.map((ms, index) => ms / floorMs[index]!);
  const ratio = median(ratios);
  const perCall = `${fmt(PER_CALL)} addresses a call, ${calls} calls`;
  figures.push(
    figure(SECTION, `add ${fmt(PER_CALL)} addresses to one webhook: time per call (median)`, Math.round(median(oursMs)), 'ms', undefined, `${perCall}; ${addSeconds.toFixed(0)} s for both sides`),
    figure(SECTION, 'floor: batch-write the same items for another webhook: time per call (median)', Math.round(median(floorMs)), 'ms', undefined, `calls alternating with ours`),
    figure(SECTION, 'add vs floor, time per call (median of the calls\' ratios)', Math.round(ratio * 100) / 100, 'x', { target: '<= 2x', pass: ratio <= 2 }, `ratio of the medians ${(median(oursMs) / median(floorMs)).toFixed(2)}x; calls' ratios ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x`),
  );
  const writesPerAddress = oursTally.items('BatchWrite') / added;
  figures.push(
    figure(
      SECTION,
      'add: items batch-written per address added',
      Math.round(writesPerAddress * 1000) / 1000,
      'items',
      { target: '<= 3', pass: writesPerAddress <= 3 },
      `${fmt(oursTally.items('BatchWrite'))} items in ${fmt(oursTally.count('BatchWrite'))} BatchWriteItem for ${fmt(added)} addresses added; floor ${(floorTally.items('BatchWrite') / (calls * PER_CALL)).toFixed(3)}`,
    ),
    figure(
      SECTION,
      'add: BatchGetItem requests per call (which addresses the webhook has)',
      oursTally.count('BatchGet') / calls,
      'requests',
      undefined,
      `${fmt(oursTally.items('BatchGet') / calls)} keys a call`,
    ),
    figure(
      SECTION,
      'add: other requests per call (lease, change record, count)',
      Math.round((oursTally.othersTotal() / calls) * 100) / 100,
      'requests',
      undefined,
      oursTally.others(calls),
    ),
    figure(SECTION, 'add: the webhook\'s address count after the run', countAfter, 'addresses', { target: `= ${fmt(total)}`, pass: countAfter === total }),
    figure(SECTION, 'bench process: peak RSS during the adds (sampled every 100 ms)', Math.round(peakRss / MIB), 'MiB'),
  );

  // 2. Lookups of 5 000 addresses, 50 of them watched, spread over all the calls.
  const used = samples.map(() => 0);
  const sets = Array.from({ length: LOOKUP_SETS }, () => {
    const watched = Array.from({ length: WATCHED_ASKED }, (_, index) => {
      const call = Math.floor((index * calls) / WATCHED_ASKED);
      return samples[call]![used[call]!++]!;
    });
    const asked = randomAddresses(ASKED - WATCHED_ASKED);
    watched.forEach((address, index) => asked.splice(index * (ASKED / WATCHED_ASKED), 0, address));
    return { watched, asked };
  });
  const lookup = async (asked: string[]) => {
    counter.reset();
    const started = performance.now();
    const result = await findActiveWatchers(CHAIN, asked);
    const ms = performance.now() - started;
    const tally = new Tally();
    tally.add(counter.calls);
    return { ...result, ms, counted: tally.count('BatchGet') + tally.count('Query'), writes: tally.count('Update') + tally.count('Delete') };
  };
  type Lookup = Awaited<ReturnType<typeof lookup>>;
  const readFigure = (name: string, done: Lookup[], matched: number) => {
    const worst = done.reduce((a, b) => (totalReads(b) > totalReads(a) ? b : a));
    const { batchGets, watcherQueries, inactiveQueries } = worst.reads;
    const pass = done.every((l) => l.reads.batchGets + l.reads.inactiveQueries <= LOOKUP_BATCH_READS && l.reads.watcherQueries <= matched);
    return figure(
      SECTION,
      name,
      totalReads(worst),
      'requests',
      { target: `<= ${LOOKUP_BATCH_READS} + ${matched}`, pass },
      `worst of ${done.length}: batchGets ${batchGets}, watcherQueries ${watcherQueries}, inactiveQueries ${inactiveQueries} (the client counted ${worst.counted}); writes ${worst.writes}`,
    );
  };
  const timeFigure = (name: string, done: Lookup[]) =>
    figure(SECTION, name, Math.round(median(done.map((l) => l.ms)) * 10) / 10, 'ms', undefined, done.map((l) => l.ms.toFixed(0)).join(', '));
  /** How many of the watched addresses came back with exactly their webhook; -1 if anything else came back. */
  const found = (result: Lookup, watched: string[]) => {
    const right = watched.filter((address) => {
      const watchers = result.matches.get(address);
      return watchers?.length === 1 && watchers[0] === ours.id;
    }).length;
    return result.matches.size > right ? -1 : right;
  };

  progress(`addresses: ${LOOKUP_SETS} lookups of ${fmt(ASKED)} addresses, ${WATCHED_ASKED} of them watched, then ${REPEATS} repeats of one`);
  const firstAsks: Lookup[] = [];
  for (const set of sets) firstAsks.push(await lookup(set.asked));
  // The first ask saved the matched addresses' watchers in their heads.
  const repeats: Lookup[] = [];
  for (let index = 0; index < REPEATS; index += 1) repeats.push(await lookup(sets[0]!.asked));
  const foundCounts = [...firstAsks.map((l, index) => found(l, sets[index]!.watched)), ...repeats.map((l) => found(l, sets[0]!.watched))];
  // On the chain: the webhook's addresses, and the floor's with its webhook's first.
  const lookupOf = `lookup ${fmt(ASKED)} (${WATCHED_ASKED} of the webhook's ${fmt(countAfter)}; ${fmt(2 * total + 1)} on the chain)`;
  figures.push(
    readFigure(`${lookupOf}, first ask: reads`, firstAsks, WATCHED_ASKED),
    readFigure(`${lookupOf}, asked again: reads`, repeats, WATCHED_ASKED),
    timeFigure(`${lookupOf}, first ask: time (median of ${firstAsks.length})`, firstAsks),
    timeFigure(`${lookupOf}, asked again: time (median of ${repeats.length})`, repeats),
    figure(SECTION, `${lookupOf}: watched found with their webhook, nothing else (worst)`, Math.min(...foundCounts), 'addresses', {
      target: `= ${WATCHED_ASKED}`,
      pass: Math.min(...foundCounts) === WATCHED_ASKED,
    }),
  );

  // One address watched by 10 000 webhooks, asked among 4 999 unwatched ones. Their items are
  // written as a create writes them: the webhook, its address item and its watcher item, then the
  // head (a head is written only after its address's watchers).
  progress(`addresses: writing ${fmt(SHARED_WATCHERS)} webhooks that watch one shared address, and looking it up`);
  const shared = randomAddresses(1)[0]!;
  const sharedWatchers = Array.from({ length: SHARED_WATCHERS }, () => ({
    ...benchWebhook('active'),
    chainId: CHAIN,
    metadata: { eventSignatures: [], addresses: [shared] },
  }));
  await writeItems(
    sharedWatchers.flatMap((webhook) => [
      { put: webhookItem(SHARED_ACCOUNT, webhook, 1) },
      { put: { ...webhookPointerKey(webhook.id), account: SHARED_ACCOUNT } },
      { put: { ...webhookAddressKey(SHARED_ACCOUNT, webhook.id, shared) } },
      ...watcherWrites(CHAIN, webhook.id, [shared], 'add'),
    ]),
  );
  await writeItems(headWrites(CHAIN, [shared]));
  const sharedAsked = randomAddresses(ASKED - 1);
  sharedAsked.splice(ASKED / 2, 0, shared);
  const sharedFirst = await lookup(sharedAsked);
  const sharedRepeats: Lookup[] = [];
  for (let index = 0; index < REPEATS; index += 1) sharedRepeats.push(await lookup(sharedAsked));
  const sharedIds = new Set(sharedWatchers.map((webhook) => webhook.id));
  const returned = [sharedFirst, ...sharedRepeats].map((l) => {
    const watchers = l.matches.get(shared) ?? [];
    const right = watchers.filter((webhookId) => sharedIds.has(webhookId));
    return l.matches.size === 1 && new Set(right).size === watchers.length ? right.length : -1;
  });
  const sharedOf = `lookup ${fmt(ASKED)} (1 watched by ${fmt(SHARED_WATCHERS)} webhooks)`;
  figures.push(
    readFigure(`${sharedOf}, first ask: reads`, [sharedFirst], 1),
    readFigure(`${sharedOf}, asked again: reads`, sharedRepeats, 1),
    timeFigure(`${sharedOf}, first ask: time`, [sharedFirst]),
    timeFigure(`${sharedOf}, asked again: time (median of ${sharedRepeats.length})`, sharedRepeats),
    figure(SECTION, `${sharedOf}: webhooks returned (worst)`, Math.min(...returned), 'webhooks', {
      target: `= ${fmt(SHARED_WATCHERS)}`,
      pass: Math.min(...returned) === SHARED_WATCHERS,
    }),
  );

  // 3. Pages of 100 addresses: the first, one from the middle of the address space, the last.
  progress('addresses: pages of 100 addresses at the start, middle and end');
  const middle = `0x8${'0'.repeat(39)}`;
  for (const [where, after] of [
    ['start', undefined],
    ['middle (after 0x8000...0)', middle],
    ['end (after the 101st largest)', largest.values[0]],
  ] as const) {
    counter.reset();
    const started = performance.now();
    const page = await queryWebhookAddresses(ACCOUNT, ours.id, PAGE_SIZE + 1, after);
    const ms = performance.now() - started;
    const scanned = counter.calls.reduce((sum, call) => sum + (call.scannedCount ?? 0), 0);
    figures.push(
      figure(
        SECTION,
        `list ${PAGE_SIZE} of ${fmt(countAfter)} addresses, ${where}: items read`,
        page.itemsRead,
        'items',
        { target: `<= ${PAGE_SIZE + 1}`, pass: page.itemsRead <= PAGE_SIZE + 1 },
        `${page.addresses.length} returned, ${counter.calls.length} Query (ScannedCount ${scanned}), ${ms.toFixed(1)} ms`,
      ),
    );
  }
  figures.push(
    figure(SECTION, 'store process: peak RSS (VmHWM) at the end', Math.round((await peakRssKiB(storePid)) / 1024), 'MiB', undefined, `${fmt(2 * total * 3 + 3 * SHARED_WATCHERS)} items: ours, the floor's, the shared address's`),
  );

  return figures;
}

const totalReads = (lookup: { reads: { batchGets: number; watcherQueries: number; inactiveQueries: number } }) =>
  lookup.reads.batchGets + lookup.reads.watcherQueries + lookup.reads.inactiveQueries;

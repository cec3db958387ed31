/**
 * The matcher's lookup: which active webhooks watch any of the addresses a block touches, on one
 * chain. Its cost grows with the addresses asked and the addresses matched, never with how many
 * addresses are watched in all:
 * - one consistent batch read per 100 addresses asked (the heads);
 * - for a matched address whose head holds no saved watchers, one query; the watchers found are then
 *   saved on the head (or a head left without watchers deleted) beside the caller's recording
 *   (`saved`), not before the matches are answered;
 * - one query for the chain's inactive webhooks (a few thousand ids a request), so that an inactive
 *   webhook costs nothing per address.
 */
import { forEachChunk } from '../store/batch';
import { deleteHeadIfUnchanged, inactiveWebhookIds, queryWatchers, readWatchHeads, saveWatchers, type WatchHead } from '../store/watch-index';

const QUERIES_IN_PARALLEL = 16;

export interface WatcherLookup {
  /**
   * Each matched address (lower-case) and the ids of the active webhooks watching it. A webhook's
   * account, and so its item, is named by its pointer (see lib/store/webhook-pointers.ts).
   */
  matches: Map<string, string[]>;
  /** Read requests sent, by kind: the benchmark's cost figures. */
  reads: { batchGets: number; watcherQueries: number; inactiveQueries: number };
  /**
   * Settles once the watchers queried are saved on their heads: to be awaited before the caller's
   * work ends (a Lambda's pending writes freeze with it). Never rejects: a head whose save failed is
   * queried again the next time, as before it was saved.
   */
  saved: Promise<void>;
}

export async function findActiveWatchers(chainId: string, addresses: string[]): Promise<WatcherLookup> {
  const asked = [...new Set(addresses.map((address) => address.toLowerCase()))];
  const [heads, inactive] = await Promise.all([
    readWatchHeads(chainId, asked),
    inactiveWebhookIds(chainId),
  ]);
  const reads = { batchGets: heads.requests, watcherQueries: 0, inactiveQueries: inactive.requests };
  const matches = new Map<string, string[]>();
  const keep = (address: string, watchers: string[]) => {
    const active = watchers.filter((webhookId) => !inactive.ids.has(webhookId));
    if (active.length > 0) matches.set(address, active);
  };
  const queried: { head: WatchHead; watchers: string[] }[] = [];
  await forEachChunk(heads.heads, 1, QUERIES_IN_PARALLEL, async ([head]) => {
    if (head!.watchers) return keep(head!.address, head!.watchers);
    const { watchers, requests } = await queryWatchers(chainId, head!.address);
    reads.watcherQueries += requests;
    keep(head!.address, watchers);
    queried.push({ head: head!, watchers });
  });
  // A head left by removed watchers goes; any other keeps its watchers for next time.
  const saved = forEachChunk(queried, 1, QUERIES_IN_PARALLEL, async ([queriedHead]) => {
    const { head, watchers } = queriedHead!;
    const saving = watchers.length === 0 ? deleteHeadIfUnchanged(chainId, head.address, head.token) : saveWatchers(chainId, head, watchers);
    await saving.catch(() => undefined);
  });
  return { matches, reads, saved };
}

import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { slotShards, SLOTS_PER_SHARD } from '../../lib/store/table';
import type { PartitionLoad } from './partition-load';

type Attributes = Record<string, AttributeValue>;

const SLOTS_PREFIX = 'SLOTS#';
/** `SLOTS#<pool>#<shard>`: the pool's name without its shard. */
const poolOf = (partition: string) => partition.slice(0, partition.lastIndexOf('#'));
export const isSlotPartition = (load: PartitionLoad) => load.index === 'table' && load.partition.startsWith(SLOTS_PREFIX);

/** What one pool of attempt slots took in a run: slots taken, and its partitions' load. */
export interface SlotPoolLoad {
  pool: string;
  takes: number;
  partitions: PartitionLoad[];
  rcu: number;
  wcu: number;
}

/**
 * Follows the attempt slots through the requests the store answers: each slot taken (a conditional
 * put that succeeded) and how long its holder kept it (until the delete that freed it), per pool.
 */
export class SlotHolds {
  private readonly taken = new Map<string, number>();
  private readonly takes = new Map<string, number>();
  readonly holdsMs: number[] = [];

  observe(command: string, input: Record<string, unknown>, succeeded: boolean, at = performance.now()): void {
    if (!succeeded) return;
    if (command === 'PutItemCommand') {
      const item = input.Item as Attributes;
      const pk = item.pk?.S;
      if (!pk?.startsWith(SLOTS_PREFIX)) return;
      this.taken.set(`${pk}\u0000${item.sk?.S}\u0000${item.holder?.S}`, at);
      this.takes.set(poolOf(pk), (this.takes.get(poolOf(pk)) ?? 0) + 1);
    } else if (command === 'DeleteItemCommand') {
      const key = input.Key as Attributes;
      const holder = (input.ExpressionAttributeValues as Attributes | undefined)?.[':holder']?.S;
      const id = `${key.pk?.S}\u0000${key.sk?.S}\u0000${holder}`;
      const since = this.taken.get(id);
      if (since === undefined) return;
      this.taken.delete(id);
      this.holdsMs.push(at - since);
    }
  }

  /** The pools seen, each with its partitions' load, the most read first. */
  pools(loads: PartitionLoad[]): SlotPoolLoad[] {
    const byPool = new Map<string, PartitionLoad[]>();
    for (const load of loads.filter(isSlotPartition)) byPool.set(poolOf(load.partition), [...(byPool.get(poolOf(load.partition)) ?? []), load]);
    const sum = (partitions: PartitionLoad[], of: (load: PartitionLoad) => number) => partitions.reduce((total, load) => total + of(load), 0);
    return [...byPool]
      .map(([pool, partitions]) => ({ pool, takes: this.takes.get(pool) ?? 0, partitions, rcu: sum(partitions, (l) => l.rcu), wcu: sum(partitions, (l) => l.wcu) }))
      .sort((a, b) => b.rcu - a.rcu);
  }

  meanHoldMs(): number {
    return this.holdsMs.reduce((sum, hold) => sum + hold, 0) / this.holdsMs.length;
  }
}

/**
 * The hottest partition of `pool` at a stage `rate` (notifications/s), the run having recorded
 * `notifications`: the pool's takes, reads and writes per notification scaled to the rate, over the
 * partitions of a pool sized for it. A slot is held for the whole attempt, so a pool taking `t`
 * attempts a second holds `t × hold` slots on average (Little's law): its capacity is raised to
 * that (at least `capacity`, the stage's), with no headroom, the fewest partitions a pool that
 * keeps up can have. The hottest partition's excess over the pool's mean, as measured, is kept.
 */
export function slotPartitionAt(pool: SlotPoolLoad, notifications: number, rate: number, holdMs: number, capacity: number) {
  const takesPerSecond = (pool.takes / notifications) * rate;
  const sized = Math.max(capacity, Math.ceil((takesPerSecond * holdMs) / 1000));
  const partitions = slotShards(sized);
  const skew = (of: (load: PartitionLoad) => number, total: number) => (Math.max(...pool.partitions.map(of)) * pool.partitions.length) / total;
  const perPartition = (units: number) => (units / notifications) * rate / partitions;
  return {
    capacity: sized,
    partitions,
    rcu: Math.round(perPartition(pool.rcu) * skew((l) => l.rcu, pool.rcu)),
    wcu: Math.round(perPartition(pool.wcu) * skew((l) => l.wcu, pool.wcu)),
    /** What one partition's slots can turn over at this hold, whatever the rate. */
    takesCeiling: Math.round((SLOTS_PER_SHARD * 1000) / holdMs),
  };
}

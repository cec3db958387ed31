import { setTimeout as sleep } from 'node:timers/promises';
import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import { machineClockMs } from './machine-clock';

/** A webhook notifications are produced for. */
export interface Target {
  webhookId: string;
  url: string;
  /** Its receiver answers: its notifications are waited for, counted and timed. */
  answered: boolean;
  /** One of the half of the webhooks that stays healthy in every phase. */
  kept: boolean;
}

/** Records one notification durably and resolves with its message id once it is recorded. */
export type RecordNotification = (target: Target) => Promise<string>;

const newHistogram = () => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });

/**
 * One phase's notifications: each answered one from the moment its recording returned to the moment
 * the healthy receiver had its body (both on the machine's clock), in microseconds. Fed with the
 * receiver's arrivals (`arrived`); arrivals of other phases' messages are ignored.
 */
export class NotificationRun {
  startedAt = machineClockMs();
  produced = 0;
  answered = 0;
  received = 0;
  keptReceived = 0;
  /** Answered notifications not received when the run gave up waiting. */
  missing = 0;
  lastArrivalAt = this.startedAt;
  finishedAt?: number;
  /** The smallest and largest message id recorded for answered targets (ids sort by creation time). */
  idRange?: [string, string];
  /** Microseconds; missing notifications count as the wait they were given, a lower bound. */
  readonly latency = { all: newHistogram(), kept: newHistogram() };
  private readonly recorded = new Map<string, { at: number; kept: boolean }>();
  private recording = 0;
  /** Notifications produced for unanswered targets, by whole second since the start. */
  private readonly unansweredPerSecond: number[] = [];
  /** Arrivals of the kept half, by whole second since the start. */
  readonly keptPerSecond: number[] = [];
  private failure?: Error;
  private wake?: () => void;

  /** Starts the clock: the run's rate counts from here. */
  start(): void {
    this.startedAt = machineClockMs();
    this.lastArrivalAt = this.startedAt;
  }

  produce(record: RecordNotification, target: Target): void {
    this.produced += 1;
    if (target.answered) this.answered += 1;
    else {
      const second = Math.floor((machineClockMs() - this.startedAt) / 1000);
      this.unansweredPerSecond[second] = (this.unansweredPerSecond[second] ?? 0) + 1;
    }
    this.recording += 1;
    record(target).then(
      (id) => {
        this.recording -= 1;
        if (!target.answered) {
          this.wake?.();
          return;
        }
        this.recorded.set(id, { at: machineClockMs(), kept: target.kept });
        if (!this.idRange) this.idRange = [id, id];
        else if (id < this.idRange[0]) this.idRange[0] = id;
        else if (id > this.idRange[1]) this.idRange[1] = id;
      },
      (error: Error) => {
        this.recording -= 1;
        this.failure ??= error;
        this.wake?.();
      },
    );
  }

  arrived(ids: string[], times: number[]): void {
    ids.forEach((id, index) => {
      const entry = this.recorded.get(id);
      if (!entry) return;
      this.recorded.delete(id);
      const at = times[index]!;
      const micros = Math.max(1, Math.round((at - entry.at) * 1000));
      this.received += 1;
      this.latency.all.recordValue(micros);
      if (entry.kept) {
        this.keptReceived += 1;
        const second = Math.floor((at - this.startedAt) / 1000);
        this.keptPerSecond[second] = (this.keptPerSecond[second] ?? 0) + 1;
        this.latency.kept.recordValue(micros);
      }
      if (at > this.lastArrivalAt) this.lastArrivalAt = at;
    });
    this.wake?.();
  }

  /** Notifications produced for unanswered targets in the first `seconds`. */
  unansweredBy(seconds: number): number {
    return this.unansweredPerSecond.slice(0, seconds).reduce((sum: number, count) => sum + (count ?? 0), 0);
  }

  get outstanding(): number {
    return this.answered - this.received;
  }

  /** Until the next arrival (or failure), or `deadline` (machine clock). */
  async nextChange(deadline: number): Promise<void> {
    if (this.failure) throw this.failure;
    const wait = deadline - machineClockMs();
    if (wait <= 0) return;
    const controller = new AbortController();
    await Promise.race([new Promise<void>((resolve) => (this.wake = resolve)), sleep(wait, undefined, { signal: controller.signal }).catch(() => undefined)]);
    controller.abort();
    this.wake = undefined;
    if (this.failure) throw this.failure;
  }

  /** Waits until every answered notification is received, or `deadline`; then counts the missing ones. */
  async finish(deadline: number): Promise<void> {
    while ((this.recording > 0 || this.outstanding > 0) && machineClockMs() < deadline) await this.nextChange(deadline);
    this.finishedAt = machineClockMs();
    this.missing = this.outstanding;
    for (const entry of this.recorded.values()) {
      const micros = Math.round((this.finishedAt - entry.at) * 1000);
      this.latency.all.recordValue(micros);
      if (entry.kept) this.latency.kept.recordValue(micros);
    }
  }

  /** Seconds from the first notification to the last arrival, or to giving up when some never came. */
  get seconds(): number {
    return ((this.missing > 0 ? this.finishedAt! : this.lastArrivalAt) - this.startedAt) / 1000;
  }
}

/**
 * Closed loop: notifications for the targets in turn, as fast as they go with at most `window`
 * answered ones recorded or under way and not yet received, until `count` answered ones have been
 * produced; then waits for them. Gives up at `deadline` (machine clock).
 */
export async function closedLoop(run: NotificationRun, record: RecordNotification, targets: Target[], options: { count: number; window: number; deadline: number }) {
  let next = 0;
  run.start();
  while (run.answered < options.count && machineClockMs() < options.deadline) {
    if (run.outstanding >= options.window) await run.nextChange(options.deadline);
    else run.produce(record, targets[next++ % targets.length]!);
  }
  await run.finish(options.deadline);
}

/**
 * Open loop: notification i for the targets in turn at start + i / rate, whatever the deliveries do,
 * for `seconds`; then waits up to `graceMs` for the answered ones to arrive.
 */
export async function pacedLoop(run: NotificationRun, record: RecordNotification, targets: Target[], options: { rate: number; seconds: number; graceMs: number }) {
  const total = Math.round(options.rate * options.seconds);
  const interval = 1000 / options.rate;
  run.start();
  const start = performance.now();
  for (let index = 0; index < total; index += 1) {
    const wait = start + index * interval - performance.now();
    if (wait > 0) await sleep(wait);
    run.produce(record, targets[index % targets.length]!);
  }
  await run.finish(machineClockMs() + options.graceMs);
}

export interface Pooled {
  /** Microsecond histograms of the runs together: every answered notification, and the kept half's. */
  all: Histogram;
  kept: Histogram;
  answered: number;
  received: number;
  keptReceived: number;
  missing: number;
}

/** Several runs' figures together (the first run's histograms take in the others'). */
export function pooled(runs: NotificationRun[]): Pooled {
  const [first, ...rest] = runs;
  const sum = (count: (run: NotificationRun) => number) => runs.reduce((total, run) => total + count(run), 0);
  for (const run of rest) {
    first!.latency.all.add(run.latency.all);
    first!.latency.kept.add(run.latency.kept);
  }
  return {
    ...first!.latency,
    answered: sum((run) => run.answered),
    received: sum((run) => run.received),
    keptReceived: sum((run) => run.keptReceived),
    missing: sum((run) => run.missing),
  };
}

import type { Logger } from '@aws-lambda-powertools/logger';
import { logger } from '../logger';
import type { MessageRef } from '../store/messages';
import { attemptDelivery, deferDelivery, deliverQueued, prepareDelivery, type Attempted, type Delivery } from './deliver';
import { sweepGraceMs } from './sweep';

export interface DispatcherLimits {
  /** Attempts under way at once, in all. */
  total: number;
  /** Attempts under way at once to one target host. */
  perHost: number;
}

interface HostLine {
  /** Attempts under way to the host (and slots reserved for the message being read again). */
  active: number;
  /** Messages waiting for a slot; read again at their turn unless they were read a moment ago. */
  waiting: Waiting[];
  /** How long the host's attempts take, a moving average: what a message in its line can expect to wait. */
  averageMs: number;
}

interface Waiting {
  ref: MessageRef;
  /** As read when the message joined the line, kept only near the line's head. */
  delivery?: Delivery;
  joinedAt: number;
}

/** A message whose turn comes this soon after it was read is sent as read, not read again. */
const FRESH_MS = 1_000;

/** The longest a message that finds its host's line full stays away, however long the line. */
const MAX_DEFERRAL_MS = 15 * 60_000;
const MIN_DEFERRAL_MS = 30_000;

/**
 * Takes messages to their attempts with bounded concurrency in all and per target host. A message
 * is read first, which tells its host. It is attempted at once when its host has a free slot;
 * otherwise it waits in its host's line, and is read again when its turn comes unless that is a
 * moment later (so the attempt sees the webhook as it is then: its URL, its status, the secrets).
 * Only the messages near the head of a line keep what was read; the others, their ids. A receiver
 * that is slow or dead so fills only its own slots and its own line, and holds nothing of anyone
 * else's.
 *
 * Memory is bounded: the messages not yet read, each host's line and all lines together. A message
 * expected to wait longer than the sweep's grace has its sweep time moved to when its turn should
 * come, so that the sweep does not take it up meanwhile; one that finds its host's line full is
 * left to the sweep until the line should have drained.
 */
export class Dispatcher {
  private readonly known = new Set<string>();
  private readonly toRead: MessageRef[] = [];
  private reading = 0;
  private active = 0;
  private waiting = 0;
  private draining = false;
  private readonly hosts = new Map<string, HostLine>();
  private idleWaiters: Array<() => void> = [];
  private readonly maxUnread: number;
  private readonly maxWaiting: number;
  private readonly maxWaitingPerHost: number;

  constructor(
    private readonly limits: DispatcherLimits,
    private readonly log: Logger = logger,
  ) {
    this.maxUnread = limits.total * 20;
    this.maxWaitingPerHost = limits.perHost * 1000;
    this.maxWaiting = limits.total * 1000;
  }

  /** Whether the message was taken (false: it is here already, or too many wait to be read; the sweep brings it back). */
  submit(ref: MessageRef): boolean {
    if (this.draining || this.known.has(ref.messageId) || this.toRead.length >= this.maxUnread) return false;
    this.known.add(ref.messageId);
    this.toRead.push(ref);
    this.readMore();
    return true;
  }

  /**
   * Lets the attempts under way finish and drops the messages not yet attempted (they stay pending;
   * the sweep takes them up after a restart): stopping waits for at most an attempt's timeout.
   */
  async drain(): Promise<void> {
    this.draining = true;
    for (const ref of this.toRead.splice(0)) this.done(ref);
    for (const line of this.hosts.values()) for (const { ref } of line.waiting.splice(0)) this.done(ref);
    this.waiting = 0;
    await this.idle();
  }

  /** Settles once every message taken is done. */
  idle(): Promise<void> {
    if (this.known.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private readMore(): void {
    while (this.reading < this.limits.total && this.toRead.length > 0) {
      const ref = this.toRead.shift()!;
      this.reading += 1;
      void this.read(ref).finally(() => {
        this.reading -= 1;
        this.readMore();
      });
    }
  }

  private async read(ref: MessageRef): Promise<void> {
    try {
      const prepared = await prepareDelivery(ref);
      if (prepared.kind === 'ready' && !this.draining) {
        const { delivery } = prepared;
        const line = this.lineOf(delivery.host);
        if (line.waiting.length === 0 && line.active < this.limits.perHost && this.active < this.limits.total) {
          this.start(delivery, line);
          return;
        }
        if (line.waiting.length < this.maxWaitingPerHost && this.waiting < this.maxWaiting) {
          const nearHead = line.waiting.length < this.limits.perHost * 8;
          line.waiting.push({ ref, delivery: nearHead ? delivery : undefined, joinedAt: Date.now() });
          this.waiting += 1;
          const turnAt = Date.now() + this.expectedWaitMs(line, line.waiting.length);
          // Only a long wait is worth a write: the sweep would take the message up before its turn.
          if (turnAt - delivery.message.sweepAt! > 0) await deferDelivery(delivery, turnAt + sweepGraceMs());
          return;
        }
        const drainedAt = Date.now() + this.expectedWaitMs(line, line.waiting.length);
        await deferDelivery(delivery, Math.min(Date.now() + MAX_DEFERRAL_MS, Math.max(Date.now() + MIN_DEFERRAL_MS, drainedAt)));
      }
    } catch (error) {
      this.log.warn('delivery not prepared; the sweep takes it up again', { messageId: ref.messageId, error: (error as Error).message });
    }
    this.done(ref);
  }

  private lineOf(host: string): HostLine {
    let line = this.hosts.get(host);
    if (!line) this.hosts.set(host, (line = { active: 0, waiting: [], averageMs: 0 }));
    return line;
  }

  private expectedWaitMs(line: HostLine, position: number): number {
    return Math.ceil(position / this.limits.perHost) * line.averageMs;
  }

  /** An attempt in a slot of its host's; when it ends, the slot goes to the next message waiting. */
  private start(delivery: Delivery, line: HostLine): void {
    line.active += 1;
    this.active += 1;
    void this.attempt(delivery.message, line, () => attemptDelivery(delivery, this.log)).finally(() => this.release(delivery.message, delivery.host, line));
  }

  private release(ref: MessageRef, host: string, line: HostLine): void {
    line.active -= 1;
    this.active -= 1;
    // A slow host's line stays, with what it has learnt of its attempts' time.
    if (line.active === 0 && line.waiting.length === 0 && line.averageMs < sweepGraceMs()) this.hosts.delete(host);
    this.done(ref);
    // A slot in all is free: the host first, then any other with messages waiting.
    this.startWaiting(host, line);
    for (const [other, otherLine] of this.hosts) if (otherLine.waiting.length > 0) this.startWaiting(other, otherLine);
  }

  /** The next messages of the line, each read again in a slot reserved for it. */
  private startWaiting(host: string, line: HostLine): void {
    while (!this.draining && line.waiting.length > 0 && line.active < this.limits.perHost && this.active < this.limits.total) {
      const { ref, delivery, joinedAt } = line.waiting.shift()!;
      this.waiting -= 1;
      line.active += 1;
      this.active += 1;
      const fresh = delivery && Date.now() - joinedAt < FRESH_MS;
      void this.attempt(ref, line, () => (fresh ? attemptDelivery(delivery, this.log) : deliverQueued(ref, this.log))).finally(() =>
        this.release(ref, host, line),
      );
    }
  }

  /** Runs an attempt, and learns from its time how long the host's line waits. */
  private async attempt(ref: MessageRef, line: HostLine, attempting: () => Promise<Attempted>): Promise<void> {
    try {
      const { attempt } = await attempting();
      if (attempt) line.averageMs = line.averageMs === 0 ? attempt.durationMs : line.averageMs * 0.8 + attempt.durationMs * 0.2;
    } catch (error) {
      this.log.warn('delivery attempt not recorded; the sweep takes it up again', { messageId: ref.messageId, error: (error as Error).message });
    }
  }

  private done(ref: MessageRef): void {
    this.known.delete(ref.messageId);
    if (this.known.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}

import { logger } from '../logger';
import type { MessageRef } from '../store/messages';
import { attemptDelivery, prepareDelivery, type Delivery } from './deliver';
import { queueDeliveries } from './queue';

export interface DispatcherLimits {
  /** Attempts under way at once, in all. */
  total: number;
  /** Attempts under way at once to one target host. */
  perHost: number;
}

interface HostLine {
  active: number;
  waiting: Delivery[];
}

/**
 * Takes messages to their attempts with bounded concurrency in all and per target host. A message
 * is read first (which tells its host), then waits in its host's line for a slot: a receiver that is
 * slow or dead fills only its own slots, and its waiting messages hold no slot of anyone else's.
 * A message submitted while it is already here is ignored. Waiting lines are bounded: what does not
 * fit is left to the sweep of the due-time index, which takes it up later.
 */
export class Dispatcher {
  private readonly known = new Set<string>();
  private readonly toRead: MessageRef[] = [];
  private reading = 0;
  private active = 0;
  private waiting = 0;
  private readonly hosts = new Map<string, HostLine>();
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly limits: DispatcherLimits,
    private readonly maxWaiting = limits.total * 20,
  ) {}

  /** Whether the message was taken (false: it is here already, or the lines are full). */
  submit(ref: MessageRef): boolean {
    if (this.known.has(ref.messageId) || this.known.size >= this.maxWaiting + this.limits.total) return false;
    this.known.add(ref.messageId);
    this.toRead.push(ref);
    this.readMore();
    return true;
  }

  /** Messages taken and not yet done. */
  get size(): number {
    return this.known.size;
  }

  /**
   * Lets the attempts under way finish and drops the messages not yet attempted (they stay pending;
   * the sweep takes them up after a restart): stopping waits for at most an attempt's timeout.
   */
  async drain(): Promise<void> {
    for (const ref of this.toRead.splice(0)) this.done(ref);
    for (const line of this.hosts.values()) for (const delivery of line.waiting.splice(0)) this.done(delivery.message);
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
      if (prepared.kind === 'ready' && this.waiting < this.maxWaiting) {
        this.enqueue(prepared.delivery);
        return;
      }
      if (prepared.kind === 'later') await queueDeliveries([{ ...ref, at: prepared.at }]);
    } catch (error) {
      logger.warn('delivery not prepared; the sweep takes it up again', { messageId: ref.messageId, error: (error as Error).message });
    }
    this.done(ref);
  }

  private enqueue(delivery: Delivery): void {
    let line = this.hosts.get(delivery.host);
    if (!line) this.hosts.set(delivery.host, (line = { active: 0, waiting: [] }));
    line.waiting.push(delivery);
    this.waiting += 1;
    this.startAttempts(delivery.host, line);
  }

  private startAttempts(host: string, line: HostLine): void {
    while (line.active < this.limits.perHost && this.active < this.limits.total && line.waiting.length > 0) {
      const delivery = line.waiting.shift()!;
      this.waiting -= 1;
      line.active += 1;
      this.active += 1;
      void this.attempt(delivery).finally(() => {
        line.active -= 1;
        this.active -= 1;
        if (line.active === 0 && line.waiting.length === 0) this.hosts.delete(host);
        this.done(delivery.message);
        // A slot in all is free: the host first, then any other with messages waiting.
        this.startAttempts(host, line);
        for (const [other, otherLine] of this.hosts) if (otherLine.waiting.length > 0) this.startAttempts(other, otherLine);
      });
    }
  }

  private async attempt(delivery: Delivery): Promise<void> {
    try {
      const { nextAttemptAt } = await attemptDelivery(delivery);
      const { account, webhookId, messageId } = delivery.message;
      if (nextAttemptAt !== undefined) await queueDeliveries([{ account, webhookId, messageId, at: nextAttemptAt }]);
    } catch (error) {
      logger.warn('delivery attempt not recorded; the sweep takes it up again', { messageId: delivery.message.messageId, error: (error as Error).message });
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

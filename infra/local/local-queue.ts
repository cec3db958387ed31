import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from '@aws-lambda-powertools/logger';
import { parseQueuedDelivery, queueEntries, type DeliveryQueue, type QueueRecord, type QueuedDelivery } from '../../lib/deliveries/queue';
import type { MessageRef } from '../../lib/store/messages';
import { logger } from '../../lib/logger';
import { Fifo } from './fifo';
import { MinHeap } from './min-heap';

export interface LocalDeliveryQueueOptions {
  /** How long a received message stays hidden before it is received again, unless acknowledged. */
  visibilityTimeoutSeconds: number;
  /** Receives after which a message goes to the dead-letter list instead of being received again (SQS's redrive policy). */
  maxReceiveCount: number;
  /** Messages held at most (visible, delayed and in flight); a send beyond it drops the rest, which the sweep takes up. */
  maxMessages?: number;
  /** Dead-lettered messages kept, the newest. */
  maxDeadLetters?: number;
  /** Where its warnings go (a full queue, a dead-lettered message); the service's logger by default. */
  log?: Logger;
}

/** A message moved off the queue after `maxReceiveCount` receives. */
export interface DeadLetter {
  messageId: string;
  group: string;
  body: string;
  receiveCount: number;
  sentTimestamp: number;
}

export interface LocalQueueStats {
  visible: number;
  delayed: number;
  inFlight: number;
  /** Dead-lettered since the queue started (the list keeps only the newest). */
  deadLettered: number;
}

/** 'deleted': not (or no longer) on the queue. */
type State = 'visible' | 'delayed' | 'inFlight' | 'deleted';

interface LocalMessage {
  id: string;
  body: string;
  md5: string;
  group: Group;
  sentAt: number;
  firstReceivedAt?: number;
  receiveCount: number;
  receipt?: string;
  state: State;
  /** Bumped whenever the message's state or visible time changes: a heap entry with an older stamp is stale. */
  stamp: number;
}

interface Group {
  id: string;
  /** Its visible messages, oldest first; may hold deleted ones, skipped. */
  visible: Fifo<LocalMessage>;
  visibleCount: number;
  inFlight: number;
  /** Messages not deleted: the group is forgotten at 0. */
  held: number;
  /** When it was last served (a sequence number): ties between groups go to the one served longest ago. */
  lastServed: number;
}

interface Waiter {
  max: number;
  resolve: (records: QueueRecord[]) => void;
  timer: NodeJS.Timeout;
  /** Stops listening to the receive's abort signal. */
  unsubscribe?: () => void;
}

const SOURCE = { eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:deliveries', awsRegion: 'local' } as const;
/** SQS's longest visibility timeout. */
const MAX_VISIBILITY_SECONDS = 12 * 60 * 60;

/**
 * The delivery queue of `npm start`'s background process, in memory, with SQS's semantics: delays, a
 * visibility timeout, receive counts, a dead-letter list, receipt handles valid until the next
 * receive. Like an SQS fair queue, it serves first the group (account) with the fewest messages in
 * flight, so an account's backlog does not hold up the others' messages: each receive takes one
 * message per group per pass, groups ordered by messages in flight then by how long ago they were
 * served. Visible messages wait in their group's FIFO; delayed and in-flight ones in a heap by the
 * time they become visible, so a receive never scans the backlog.
 */
export class LocalDeliveryQueue implements DeliveryQueue {
  private readonly groups = new Map<string, Group>();
  /** Groups with visible messages. */
  private readonly ready = new Set<Group>();
  private readonly hidden = new MinHeap<{ at: number; stamp: number; message: LocalMessage }>((a, b) => a.at - b.at);
  private readonly receipts = new Map<string, LocalMessage>();
  private readonly counts = { visible: 0, delayed: 0, inFlight: 0 };
  private readonly deadLettered: DeadLetter[] = [];
  private deadLetteredTotal = 0;
  private waiters: Waiter[] = [];
  private wake?: { at: number; timer: NodeJS.Timeout };
  private stamps = 0;
  private serves = 0;
  private closed = false;
  private readonly maxMessages: number;
  private readonly maxDeadLetters: number;
  private readonly log: Logger;

  constructor(private readonly options: LocalDeliveryQueueOptions) {
    this.maxMessages = options.maxMessages ?? 1_000_000;
    this.maxDeadLetters = options.maxDeadLetters ?? 10_000;
    this.log = options.log ?? logger;
  }

  /** Past `maxMessages`, the rest is dropped with one warning: the sweep of the due-time index takes those messages up. */
  async send(deliveries: QueuedDelivery[]): Promise<void> {
    if (this.closed) return;
    const now = Date.now();
    const entries = queueEntries(deliveries, now);
    const room = Math.max(0, this.maxMessages - this.held());
    if (entries.length > room) this.log.warn('local queue full: messages dropped; the sweep takes them up', { dropped: entries.length - room, held: this.held() });
    for (const { body, group, at } of entries.slice(0, room)) {
      const message: LocalMessage = {
        id: randomUUID(),
        body,
        md5: createHash('md5').update(body).digest('hex'),
        group: this.groupOf(group),
        sentAt: now,
        receiveCount: 0,
        state: 'deleted',
        stamp: 0,
      };
      message.group.held += 1;
      if (at > now) {
        this.setState(message, 'delayed');
        this.hideUntil(message, at);
      } else this.makeVisible(message);
    }
    this.serveWaiters();
  }

  async receive(max: number, waitSeconds: number, signal?: AbortSignal): Promise<QueueRecord[]> {
    if (this.closed || signal?.aborted) return [];
    const records = this.take(Math.max(1, max));
    if (records.length > 0 || waitSeconds <= 0) return records;
    return new Promise((resolve) => {
      const waiter: Waiter = { max: Math.max(1, max), resolve, timer: setTimeout(() => this.settle(waiter, this.take(waiter.max)), waitSeconds * 1000) };
      this.waiters.push(waiter);
      if (signal) {
        const abort = () => this.settle(waiter, []);
        signal.addEventListener('abort', abort, { once: true });
        waiter.unsubscribe = () => signal.removeEventListener('abort', abort);
      }
      this.armWake();
    });
  }

  /** Only for a message in flight under this receipt handle, as on SQS. */
  async changeVisibility(record: QueueRecord, seconds: number): Promise<void> {
    const message = this.receipts.get(record.receiptHandle);
    if (message?.state !== 'inFlight') return;
    const hidden = Math.max(0, Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(seconds)));
    if (hidden === 0) {
      this.makeVisible(message);
      this.serveWaiters();
    } else {
      this.hideUntil(message, Date.now() + hidden * 1000);
      this.armWake();
    }
  }

  /** A receipt handle no longer current (the message received again since, or deleted) is ignored, as on SQS. */
  async acknowledge(records: QueueRecord[]): Promise<void> {
    for (const { receiptHandle } of records) {
      const message = this.receipts.get(receiptHandle);
      if (message) this.remove(message);
    }
  }

  deadLetters(): DeadLetter[] {
    return [...this.deadLettered];
  }

  stats(): LocalQueueStats {
    this.reveal(Date.now());
    const { visible, delayed, inFlight } = this.counts;
    return { visible, delayed, inFlight, deadLettered: this.deadLetteredTotal };
  }

  /** Pending receives resolve with nothing at once; later ones too. No timer is left running. */
  close(): void {
    this.closed = true;
    if (this.wake) clearTimeout(this.wake.timer);
    this.wake = undefined;
    for (const waiter of [...this.waiters]) this.settle(waiter, []);
  }

  private take(max: number): QueueRecord[] {
    const now = Date.now();
    this.reveal(now);
    const records: QueueRecord[] = [];
    while (records.length < max && this.ready.size > 0) {
      const pass = [...this.ready].sort((a, b) => a.inFlight - b.inFlight || a.lastServed - b.lastServed);
      for (const group of pass) {
        if (records.length >= max) break;
        const message = this.nextOf(group);
        if (message) records.push(this.deliver(message, now));
      }
    }
    return records;
  }

  /** The group's oldest visible message that may still be received; those received too often go to the dead-letter list. */
  private nextOf(group: Group): LocalMessage | undefined {
    for (let message = group.visible.shift(); message; message = group.visible.shift()) {
      if (message.state !== 'visible') continue;
      if (message.receiveCount < this.options.maxReceiveCount) return message;
      this.deadLetter(message);
    }
    return undefined;
  }

  private deliver(message: LocalMessage, now: number): QueueRecord {
    message.receiveCount += 1;
    message.firstReceivedAt ??= now;
    if (message.receipt) this.receipts.delete(message.receipt);
    message.receipt = randomUUID();
    this.receipts.set(message.receipt, message);
    message.group.lastServed = ++this.serves;
    this.setState(message, 'inFlight');
    this.hideUntil(message, now + this.options.visibilityTimeoutSeconds * 1000);
    return {
      messageId: message.id,
      receiptHandle: message.receipt,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receiveCount),
        SentTimestamp: String(message.sentAt),
        ApproximateFirstReceiveTimestamp: String(message.firstReceivedAt),
        SenderId: 'local',
        MessageGroupId: message.group.id,
      },
      messageAttributes: {},
      md5OfBody: message.md5,
      ...SOURCE,
    };
  }

  private deadLetter(message: LocalMessage): void {
    this.remove(message);
    this.deadLetteredTotal += 1;
    this.deadLettered.push({ messageId: message.id, group: message.group.id, body: message.body, receiveCount: message.receiveCount, sentTimestamp: message.sentAt });
    if (this.deadLettered.length > this.maxDeadLetters) this.deadLettered.shift();
    this.log.warn('queue message dead-lettered after too many receives', { ...deliveryIds(message.body), receiveCount: message.receiveCount });
  }

  private remove(message: LocalMessage): void {
    this.setState(message, 'deleted');
    if (message.receipt) this.receipts.delete(message.receipt);
    const { group } = message;
    group.held -= 1;
    if (group.held === 0) this.groups.delete(group.id);
  }

  /** Moves the messages whose hidden time has passed into their groups' FIFOs. */
  private reveal(now: number): void {
    for (let top = this.hidden.peek(); top && top.at <= now; top = this.hidden.peek()) {
      this.hidden.pop();
      if (top.stamp === top.message.stamp) this.makeVisible(top.message);
    }
  }

  private makeVisible(message: LocalMessage): void {
    this.setState(message, 'visible');
    message.group.visible.push(message);
  }

  private hideUntil(message: LocalMessage, at: number): void {
    message.stamp = ++this.stamps;
    this.hidden.push({ at, stamp: message.stamp, message });
  }

  private setState(message: LocalMessage, state: State): void {
    const { group } = message;
    if (message.state !== 'deleted') this.counts[message.state] -= 1;
    if (state !== 'deleted') this.counts[state] += 1;
    group.visibleCount += (state === 'visible' ? 1 : 0) - (message.state === 'visible' ? 1 : 0);
    group.inFlight += (state === 'inFlight' ? 1 : 0) - (message.state === 'inFlight' ? 1 : 0);
    if (group.visibleCount > 0) this.ready.add(group);
    else this.ready.delete(group);
    message.state = state;
    message.stamp = ++this.stamps;
  }

  private groupOf(id: string): Group {
    let group = this.groups.get(id);
    if (!group) {
      group = { id, visible: new Fifo(), visibleCount: 0, inFlight: 0, held: 0, lastServed: 0 };
      this.groups.set(id, group);
    }
    return group;
  }

  private held(): number {
    return this.counts.visible + this.counts.delayed + this.counts.inFlight;
  }

  private serveWaiters(): void {
    this.reveal(Date.now());
    while (this.waiters.length > 0 && this.ready.size > 0) {
      const records = this.take(this.waiters[0]!.max);
      if (records.length === 0) break;
      this.settle(this.waiters[0]!, records);
    }
    this.armWake();
  }

  private settle(waiter: Waiter, records: QueueRecord[]): void {
    clearTimeout(waiter.timer);
    waiter.unsubscribe?.();
    this.waiters = this.waiters.filter((other) => other !== waiter);
    waiter.resolve(records);
    if (this.waiters.length === 0 && this.wake) {
      clearTimeout(this.wake.timer);
      this.wake = undefined;
    }
  }

  /** While receives wait: a timer for the next message to become visible. */
  private armWake(): void {
    const next = this.hidden.peek();
    if (this.closed || this.waiters.length === 0 || !next || this.wake?.at === next.at) return;
    if (this.wake) clearTimeout(this.wake.timer);
    const timer = setTimeout(() => {
      this.wake = undefined;
      this.serveWaiters();
    }, Math.max(0, next.at - Date.now()));
    this.wake = { at: next.at, timer };
  }
}

/** The ids a delivery's body names, for the log (no secrets in it). */
function deliveryIds(body: string): Partial<MessageRef> {
  try {
    const { account, webhookId, messageId } = parseQueuedDelivery(body);
    return { account, webhookId, messageId };
  } catch {
    return {};
  }
}

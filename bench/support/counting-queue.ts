import { queueEntries, type DeliveryQueue, type QueueRecord, type QueuedDelivery } from '../../lib/deliveries/queue';
import { SQS_BATCH } from '../../lib/deliveries/sqs-queue';

/** SendMessageBatch, ReceiveMessage and DeleteMessageBatch take at most 10 messages. */

/** What one account's messages went through the queue. */
export interface GroupCounts {
  /** Entries queued. */
  sent: number;
  /** Of those, put off by the consumer (queued again without an attempt: `deferrals` counted up). */
  putOff: number;
  /** For each record received: ms from its sending to its receive (in the queue, waiting for a consumer). */
  waits: number[];
}

/**
 * A delivery queue that passes everything to another and counts the calls as Amazon SQS would see
 * them: SqsDeliveryQueue sends the entries of each `send` in SendMessageBatch requests of 10 and
 * deletes in DeleteMessageBatch requests of 10; each receive is one ReceiveMessage request.
 */
export class CountingQueue implements DeliveryQueue {
  readonly counts = { sendRequests: 0, sentEntries: 0, receiveRequests: 0, emptyReceives: 0, received: 0, deleteRequests: 0, deleted: 0 };
  readonly groups = new Map<string, GroupCounts>();

  constructor(private readonly inner: DeliveryQueue) {}

  async send(deliveries: QueuedDelivery[]): Promise<void> {
    const entries = queueEntries(deliveries, Date.now()).length;
    this.counts.sendRequests += Math.ceil(entries / SQS_BATCH);
    this.counts.sentEntries += entries;
    for (const { account, deferrals } of deliveries) {
      let group = this.groups.get(account);
      if (!group) this.groups.set(account, (group = { sent: 0, putOff: 0, waits: [] }));
      group.sent += 1;
      if (deferrals) group.putOff += 1;
    }
    await this.inner.send(deliveries);
  }

  async receive(max: number, waitSeconds: number): Promise<QueueRecord[]> {
    const records = await this.inner.receive(max, waitSeconds);
    this.counts.receiveRequests += 1;
    if (records.length === 0) this.counts.emptyReceives += 1;
    this.counts.received += records.length;
    const now = Date.now();
    for (const { attributes } of records) this.groups.get(attributes.MessageGroupId ?? '')?.waits.push(now - Number(attributes.SentTimestamp));
    return records;
  }

  changeVisibility(record: QueueRecord, seconds: number): Promise<void> {
    return this.inner.changeVisibility(record, seconds);
  }

  async acknowledge(records: QueueRecord[]): Promise<void> {
    this.counts.deleteRequests += Math.ceil(records.length / SQS_BATCH);
    this.counts.deleted += records.length;
    await this.inner.acknowledge(records);
  }

  reset(): void {
    for (const name of Object.keys(this.counts) as Array<keyof CountingQueue['counts']>) this.counts[name] = 0;
    this.groups.clear();
  }
}

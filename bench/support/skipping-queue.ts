import type { DeliveryQueue, QueueRecord, QueuedDelivery } from '../../lib/deliveries/queue';

/** The queue as the loop sees it with one account's records acknowledged as they are received, unread: what its recording alone costs the others. */
export class SkippingQueue implements DeliveryQueue {
  constructor(
    private readonly inner: DeliveryQueue,
    private readonly skipped: string,
  ) {}

  send(deliveries: QueuedDelivery[]) {
    return this.inner.send(deliveries);
  }

  async receive(max: number, waitSeconds: number): Promise<QueueRecord[]> {
    for (;;) {
      const records = await this.inner.receive(max, waitSeconds);
      const skipped = records.filter(({ attributes }) => attributes.MessageGroupId === this.skipped);
      if (skipped.length === 0) return records;
      await this.inner.acknowledge(skipped);
      if (skipped.length < records.length) return records.filter((record) => !skipped.includes(record));
    }
  }

  changeVisibility(record: QueueRecord, seconds: number) {
    return this.inner.changeVisibility(record, seconds);
  }

  acknowledge(records: QueueRecord[]) {
    return this.inner.acknowledge(records);
  }
}

/** A binary min-heap: push and pop in O(log n), the least item (by `compare`) first. */
export class MinHeap<T> {
  private readonly items: T[] = [];

  constructor(private readonly compare: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const { items } = this;
    items.push(item);
    for (let index = items.length - 1; index > 0; ) {
      const parent = (index - 1) >> 1;
      if (this.compare(items[index]!, items[parent]!) >= 0) break;
      [items[index], items[parent]] = [items[parent]!, items[index]!];
      index = parent;
    }
  }

  pop(): T | undefined {
    const { items } = this;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    for (let index = 0; ; ) {
      const left = 2 * index + 1;
      const right = left + 1;
      let least = index;
      if (left < items.length && this.compare(items[left]!, items[least]!) < 0) least = left;
      if (right < items.length && this.compare(items[right]!, items[least]!) < 0) least = right;
      if (least === index) return top;
      [items[index], items[least]] = [items[least]!, items[index]!];
      index = least;
    }
  }
}

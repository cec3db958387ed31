import { randomBytes } from 'node:crypto';
import { startBenchStore } from '../support/store';
import { createWebhook } from '../../lib/webhooks/webhooks';
import { addAddresses } from '../../lib/addresses/addresses';
import { writeItems } from '../../lib/store/batch';
import { webhookAddressKey } from '../../lib/store/table';
import { headWrites, watcherWrites } from '../../lib/store/watch-index';

async function main() {
  const store = await startBenchStore();
  const account = 'probe';
  const input = { url: 'https://receiver.example.com/hooks', chainId: '43114', eventType: 'address_activity' as const, metadata: { addresses: [`0x${randomBytes(20).toString('hex')}`], eventSignatures: [] }, name: '', description: '', includeInternalTxs: false, includeLogs: false };
  const a = await createWebhook(account, input);
  const b = await createWebhook(account, input);
  const gen = () => Array.from({ length: 10000 }, () => `0x${randomBytes(20).toString('hex')}`);
  for (let i = 0; i < 30; i++) {
    let t = performance.now();
    await addAddresses(account, a.id, { addresses: gen() });
    const ours = performance.now() - t;
    const addrs = gen();
    t = performance.now();
    await writeItems([...addrs.map((x) => ({ put: { ...webhookAddressKey(account, b.id, x) } })), ...watcherWrites('43114', { account, webhookId: b.id }, addrs, 'add'), ...headWrites('43114', addrs)]);
    const floor = performance.now() - t;
    console.log(i, require("fs").readFileSync(`/proc/${store.pid}/status`,"utf8").match(/VmRSS:\s+(\d+)/)![1], ours.toFixed(0), floor.toFixed(0), process.memoryUsage().rss >> 20);
  }
  await store.stop();
}
main().then(() => process.exit(0));

import { pageTokenKey } from '../../lib/config/page-token-key';
import { pageTokens } from '../../lib/page-token';
import type { WebhookStatus } from '../../lib/schemas/fields';
import { queryWebhooks } from '../../lib/store/webhooks';
import { listWebhooks } from '../../lib/webhooks/webhooks';
import { figure, type BenchOptions, type Figure } from '../support/report';
import { instrumentDynamoDb, seedWebhooks, type DynamoDbCounter } from '../support/store';

const SECTION = '1 list cost';

/** Account layouts: which status the filter asks for, and which share of the account holds it. */
const SELECTIVITIES: { share: string; statusOf: (index: number) => WebhookStatus; filter: WebhookStatus }[] = [
  { share: '100%', statusOf: () => 'active', filter: 'active' },
  { share: '50%', statusOf: (index) => (index % 2 ? 'inactive' : 'active'), filter: 'inactive' },
  { share: '1%', statusOf: (index) => (index % 100 === 0 ? 'inactive' : 'active'), filter: 'inactive' },
];

/**
 * Items DynamoDB reads (ScannedCount) per list page, through the real listWebhooks, for accounts of
 * growing size and filters of falling selectivity: the first five pages and one deep page.
 */
export async function listCost({ quick, progress }: BenchOptions): Promise<Figure[]> {
  const sizes = quick ? [10, 1000] : [10, 1000, 100_000];
  const counter = instrumentDynamoDb();
  try {
    return await measureListCost(sizes, counter, progress);
  } finally {
    counter.stop();
  }
}

async function measureListCost(sizes: number[], counter: DynamoDbCounter, progress: BenchOptions['progress']): Promise<Figure[]> {
  const figures: Figure[] = [];
  let worstExcess = -Infinity;
  let maxRequests = 0;
  for (const size of sizes) {
    for (const selectivity of SELECTIVITIES) {
      const account = `bench-list-${size}-${selectivity.share.replace('%', 'pct')}`;
      progress(`list cost: seeding ${size} webhooks (${selectivity.share} ${selectivity.filter})`);
      await seedWebhooks(account, size, selectivity.statusOf);
      for (const pageSize of [10, 100]) {
        for (const status of [undefined, selectivity.filter]) {
          if (status === undefined && selectivity.share !== '100%') continue; // unfiltered: once per size
          const reads = await pagesRead(account, status, pageSize, size, counter);
          maxRequests = Math.max(maxRequests, ...reads.map((read) => read.requests));
          const worst = Math.max(...reads.map((read) => read.itemsRead));
          worstExcess = Math.max(worstExcess, worst - (pageSize + 1));
          figures.push(
            figure(
              SECTION,
              `items read/page, ${size} webhooks, ${status ? `status=${status} (${selectivity.share})` : 'no filter'}, pageSize ${pageSize}`,
              worst,
              'items',
              { target: `<= ${pageSize + 1}`, pass: worst <= pageSize + 1 },
              `pages: ${reads.map((read) => read.itemsRead).join(',')}`,
            ),
          );
        }
      }
    }
  }
  figures.push(figure(SECTION, 'DynamoDB requests per list call (max)', maxRequests, 'requests', { target: '= 1', pass: maxRequests === 1 }));
  return figures;
}

/** The first five pages, then one page deep in the list (after the middle item of the selection). */
async function pagesRead(
  account: string,
  status: WebhookStatus | undefined,
  pageSize: number,
  accountSize: number,
  counter: DynamoDbCounter,
) {
  const reads: { itemsRead: number; requests: number }[] = [];
  const measure = async (pageToken?: string) => {
    counter.reset();
    const page = await listWebhooks(account, { pageSize, status, pageToken });
    const queries = counter.calls.filter((call) => call.command === 'QueryCommand');
    reads.push({ itemsRead: queries.reduce((sum, call) => sum + (call.scannedCount ?? 0), 0), requests: counter.calls.length });
    return page.nextPageToken;
  };
  let token: string | undefined;
  for (let page = 0; page < 5; page += 1) {
    token = await measure(token);
    if (!token) break;
  }
  // A deep page: start after the item halfway down the selection.
  const { webhooks } = await queryWebhooks({ account, status, limit: Math.max(1, Math.floor(accountSize / 2)) });
  const middle = webhooks.at(-1);
  if (middle) await measure(pageTokens.webhooks.encode(await pageTokenKey(), { account, status }, middle.id));
  return reads;
}

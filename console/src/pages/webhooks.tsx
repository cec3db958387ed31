import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { answer, api, type Chain } from '../api/client';
import { formatTime, webhookTitle } from '../format';
import { useLoad } from '../hooks';
import { takeNotice } from '../notices';
import { paths } from '../paths';
import { Loads, PageHeader, Pager, StatusBadge, StatusFilter, usePages } from '../ui/components';
import { chainLabel, loadChains } from './chains';

const PAGE_SIZE = 25;
const REFRESH_MS = 15_000;
const STATUSES = ['active', 'inactive'] as const;
type ListedStatus = (typeof STATUSES)[number] | '';

export function WebhooksPage() {
  const { query, route } = useLocation();
  // The filter lives in the URL (?status=): a reload, a shared link and Back keep it.
  const status: ListedStatus = STATUSES.find((known) => known === query.status) ?? '';
  const [notice, setNotice] = useState<string>();
  // Set after the first render, so that the role=status region exists before its text and is announced.
  useEffect(() => setNotice(takeNotice()), []);
  // Loaded once for the page, not again for each filter.
  const chains = useLoad(loadChains, []);

  return (
    <>
      <PageHeader title="Webhooks">
        <a class="button primary" href={paths.newWebhook}>
          Create webhook
        </a>
      </PageHeader>
      <div role="status">{notice && <p class="notice notice-success">{notice}</p>}</div>
      <StatusFilter class="list-filter" statuses={STATUSES} value={status} onChange={(value) => route(paths.webhooksWithStatus(value))} />
      {/* Keyed by the filter: another status starts at its first page. */}
      <WebhookList key={status} status={status} chains={chains.data} />
    </>
  );
}

function WebhookList({ status, chains }: { status: ListedStatus; chains: Chain[] | undefined }) {
  const pages = usePages();
  const list = useLoad(
    (signal) => answer(api.GET('/v1/webhooks', { params: { query: { pageSize: PAGE_SIZE, status: status || undefined, pageToken: pages.pageToken } }, signal })),
    [status, pages.pageToken],
    { refreshMs: REFRESH_MS },
  );
  return (
    <Loads loaded={list} errorTitle="The webhooks could not be loaded" loadingText="Loading webhooks">
      {({ webhooks, nextPageToken }) => (
        <>
          {webhooks.length === 0 && (
            <p>
              {pages.pageNumber > 1 ? 'No more webhooks.' : status ? `No ${status} webhooks.` : 'No webhooks yet. '}
              {!status && pages.pageNumber === 1 && <a href={paths.newWebhook}>Create the first one</a>}
            </p>
          )}
          {webhooks.length > 0 && (
            <div class="table-scroll">
              <table class="stacked">
                <caption class="visually-hidden">Webhooks{status ? `, ${status}` : ''}, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Status</th>
                    <th scope="col">Chain</th>
                    <th scope="col">URL</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {webhooks.map((webhook) => (
                    <tr key={webhook.id}>
                      <th scope="row" class="break" data-label="Name">
                        <a href={paths.webhook(webhook.id)}>{webhookTitle(webhook)}</a>
                      </th>
                      <td data-label="Status">
                        <StatusBadge status={webhook.status} />
                      </td>
                      <td data-label="Chain">{chainLabel(chains, webhook.chainId)}</td>
                      <td class="break mono" data-label="URL">
                        {webhook.url}
                      </td>
                      <td data-label="Created">{formatTime(webhook.createdAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <Pager pages={pages} nextPageToken={nextPageToken} label="Webhooks" />
        </>
      )}
    </Loads>
  );
}

import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { answer, api, ApiFailure, type Webhook } from '../../api/client';
import { webhookTitle } from '../../format';
import { useAction, useLoad } from '../../hooks';
import { paths } from '../../paths';
import { ErrorNotice, Loading, PageHeader, StatusBadge } from '../../ui/components';
import { WebhookActions } from '../webhook-actions';
import { AddressesTab } from './addresses';
import { BackfillsTab } from './backfills';
import { DeliveriesTab } from './deliveries';
import { SettingsTab } from './settings';

const TABS = [
  { section: '', label: 'Settings' },
  { section: 'addresses', label: 'Addresses' },
  { section: 'deliveries', label: 'Deliveries' },
  { section: 'backfills', label: 'Backfills' },
] as const;
type Section = (typeof TABS)[number]['section'];
/** The webhook is read again now and then: a message out of retries deactivates it. */
const WEBHOOK_REFRESH_MS = 30_000;

/**
 * `/console/webhooks/<id>` and its tabs: one component for the four routes, so that the webhook is
 * loaded once and the heading keeps its focus while the user moves between tabs.
 */
export function WebhookPages({ id }: { id: string }) {
  const { path } = useLocation();
  const section = (path.slice(paths.webhook(id).length).replace(/^\//, '') || '') as Section;
  const webhook = useLoad((signal) => answer(api.GET('/v1/webhooks/{id}', { params: { path: { id } }, signal })), [id], { refreshMs: WEBHOOK_REFRESH_MS });

  if (!webhook.data) {
    if (webhook.error) {
      return (
        <>
          <PageHeader title={webhook.error instanceof ApiFailure && webhook.error.statusCode === 404 ? 'Webhook not found' : 'Webhook'} />
          <ErrorNotice title="Could not load the webhook" error={webhook.error} />
          <p>
            <a href={paths.webhooks}>Back to the webhooks</a>
          </p>
        </>
      );
    }
    return <Loading what="Loading the webhook" />;
  }
  return (
    <WebhookFrame webhook={webhook.data} section={section} onChanged={webhook.reload} loadError={webhook.error}>
      {section === '' && <SettingsTab webhook={webhook.data} />}
      {section === 'addresses' && <AddressesTab webhook={webhook.data} />}
      {section === 'deliveries' && <DeliveriesTab webhook={webhook.data} />}
      {section === 'backfills' && <BackfillsTab webhook={webhook.data} />}
    </WebhookFrame>
  );
}

function WebhookFrame(props: { webhook: Webhook; section: Section; onChanged: () => Promise<void>; loadError: unknown; children: ComponentChildren }) {
  const { webhook, section } = props;
  const [testMessageId, setTestMessageId] = useState<string>();
  const sendTest = useAction(async () => {
    setTestMessageId(undefined);
    const { messageId } = await answer(api.POST('/v1/webhooks/{id}/test', { params: { path: { id: webhook.id } } }));
    setTestMessageId(messageId);
  });
  return (
    <>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <a href={paths.webhooks}>Webhooks</a>
      </nav>
      <PageHeader title={webhookTitle(webhook)}>
        <WebhookActions webhook={webhook} onChanged={() => void props.onChanged()} />
        <button type="button" onClick={() => void sendTest.run()} disabled={sendTest.busy}>
          {sendTest.busy ? 'Sending…' : 'Send test notification'}
        </button>
      </PageHeader>
      <p class="webhook-summary">
        <StatusBadge status={webhook.status} /> <span class="mono break">{webhook.url}</span>
      </p>
      <div role="status">
        {testMessageId && (
          <p class="notice notice-success">
            Test notification queued: <a href={paths.delivery(webhook.id, testMessageId)}>message {testMessageId}</a>
          </p>
        )}
      </div>
      <ErrorNotice title="No test notification sent" error={sendTest.error} />
      <ErrorNotice title="Could not refresh the webhook" error={props.loadError} />
      <nav aria-label="Webhook sections">
        <ul class="tabs">
          {TABS.map((tab) => (
            <li key={tab.section}>
              <a href={paths.webhook(webhook.id, tab.section)} aria-current={tab.section === section ? 'page' : undefined}>
                {tab.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {props.children}
    </>
  );
}

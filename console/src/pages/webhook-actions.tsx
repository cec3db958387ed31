import { useState } from 'preact/hooks';
import { answer, api, type Webhook } from '../api/client';
import { webhookTitle } from '../format';
import { useAction } from '../hooks';
import { routeWithNotice } from '../notices';
import { paths } from '../paths';
import { ConfirmDialog, ErrorNotice } from '../ui/components';

/**
 * A webhook's actions, on its page: edit, deactivate or activate, and delete for good behind a typed
 * confirmation of its name (its id when it has none).
 */
export function WebhookActions({ webhook, onChanged }: { webhook: Webhook; onChanged: () => void }) {
  const [announcement, setAnnouncement] = useState('');
  const [confirming, setConfirming] = useState(false);
  const path = { id: webhook.id };
  const title = webhookTitle(webhook);

  const toggle = useAction(async () => {
    setAnnouncement('');
    // Deactivating is the hosted API's deactivateWebhook: DELETE without permanent, which keeps the webhook.
    const changed =
      webhook.status === 'active'
        ? await answer(api.DELETE('/v1/webhooks/{id}', { params: { path } }))
        : await answer(api.PATCH('/v1/webhooks/{id}', { params: { path }, body: { status: 'active' } }));
    setAnnouncement(
      changed.status === 'active'
        ? 'Webhook activated: it is notified again, and the messages that waited are being sent.'
        : 'Webhook deactivated: it is not notified of activity on its chain, and its pending messages wait until it is activated.',
    );
    onChanged();
  });

  const remove = useAction(async () => {
    await answer(api.DELETE('/v1/webhooks/{id}', { params: { path, query: { permanent: 'true' } } }));
    setConfirming(false);
    routeWithNotice(paths.webhooks, `Webhook ${title} was deleted for good.`);
  });

  return (
    <div class="webhook-actions">
      <a class="button" href={paths.editWebhook(webhook.id)}>
        Edit
      </a>
      <button type="button" onClick={() => void toggle.run()} disabled={toggle.busy}>
        {webhook.status === 'active' ? 'Deactivate' : 'Activate'}
      </button>
      <button
        type="button"
        class="danger"
        onClick={() => {
          remove.clearError();
          setConfirming(true);
        }}
      >
        Delete
      </button>
      <div role="status" class="webhook-actions-status">
        {announcement && <span class="muted">{announcement}</span>}
      </div>
      <ErrorNotice error={toggle.error} title={webhook.status === 'active' ? 'The webhook was not deactivated' : 'The webhook was not activated'} />
      <ConfirmDialog
        open={confirming}
        title="Delete this webhook for good?"
        confirmLabel="Delete for good"
        typed={title}
        danger
        busy={remove.busy}
        error={remove.error}
        onConfirm={() => void remove.run()}
        onCancel={() => setConfirming(false)}
      >
        <p>
          The webhook, its delivery log, its addresses and its backfills are removed, and cannot be brought back. To stop its notifications for a
          while, deactivate it instead.
        </p>
      </ConfirmDialog>
    </div>
  );
}

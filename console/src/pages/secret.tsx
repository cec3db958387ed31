import { useId, useRef, useState } from 'preact/hooks';
import { answer, api, ApiFailure } from '../api/client';
import { useAction } from '../hooks';
import { ConfirmDialog, CopyButton, ErrorNotice, Notice, PageHeader } from '../ui/components';

/** What the page shows: nothing asked yet, the secret, no secret yet (a 404), or the one a rotation just made. */
type Shown = { state: 'hidden' } | { state: 'revealed'; secret: string } | { state: 'none' } | { state: 'rotated'; secret: string; graceEnded: boolean };

/**
 * The account's shared secret, which signs every notification: hidden until asked for, and rotated
 * behind a confirmation that explains the grace period.
 */
export function SharedSecretPage() {
  const [shown, setShown] = useState<Shown>({ state: 'hidden' });
  const [confirming, setConfirming] = useState(false);
  const [endGracePeriod, setEndGracePeriod] = useState(false);
  const rotateButton = useRef<HTMLButtonElement>(null);
  const endGraceId = useId();

  const reveal = useAction(async () => {
    try {
      const { secret } = await answer(api.GET('/v1/webhooks:getSharedSecret'));
      setShown({ state: 'revealed', secret });
    } catch (failure) {
      if (failure instanceof ApiFailure && failure.statusCode === 404) setShown({ state: 'none' });
      else throw failure;
    }
  });

  const rotate = useAction(async (endGrace: boolean) => {
    const { secret } = await answer(
      api.POST('/v1/webhooks:generateOrRotateSharedSecret', { params: { query: endGrace ? { endGracePeriod: 'true' } : {} } }),
    );
    setShown({ state: 'rotated', secret, graceEnded: endGrace });
    setConfirming(false);
    setEndGracePeriod(false);
  });

  const generate = useAction(async () => {
    const { secret } = await answer(api.POST('/v1/webhooks:generateOrRotateSharedSecret', {}));
    setShown({ state: 'revealed', secret });
  });

  const closeDialog = () => {
    setConfirming(false);
    setEndGracePeriod(false);
    rotate.clearError();
    rotateButton.current?.focus();
  };

  return (
    <>
      <PageHeader title="Shared secret" />
      <p>
        Every notification is signed with the account's shared secret (HMAC-SHA256, in the <code>webhook-signature</code> and <code>x-signature</code>{' '}
        headers). A receiver keeps the secret and checks the signature before it trusts a notification: the <a href="/docs">API reference at /docs</a> and the
        project's <code>docs/receiving.md</code> (in its repository) show how, with code for Node and Python.
      </p>

      <section class="card" aria-labelledby="secret-heading">
        <h2 id="secret-heading">The current secret</h2>
        {shown.state === 'hidden' && (
          <button type="button" onClick={() => reveal.run()} disabled={reveal.busy}>
            {reveal.busy ? 'Revealing…' : 'Reveal secret'}
          </button>
        )}
        {shown.state === 'none' && (
          <>
            <Notice>
              The account has no shared secret yet. One is made when you generate it here or with <code>POST /v1/webhooks:generateOrRotateSharedSecret</code>, or
              when the account's first notification is sent.
            </Notice>
            <button type="button" class="primary" onClick={() => generate.run()} disabled={generate.busy}>
              {generate.busy ? 'Generating…' : 'Generate secret'}
            </button>
            <ErrorNotice error={generate.error} title="Not generated" />
          </>
        )}
        {(shown.state === 'revealed' || shown.state === 'rotated') && (
          <>
            {shown.state === 'rotated' && (
              <Notice tone="success">
                The secret was rotated.{' '}
                {shown.graceEnded
                  ? 'The previous secret stopped signing at once: notifications carry only the new signature from now on.'
                  : 'The previous secret keeps signing beside the new one for the grace period (24 hours by default): update your receivers before it ends.'}
              </Notice>
            )}
            <dl class="properties">
              <dt>{shown.state === 'rotated' ? 'New secret' : 'Secret'}</dt>
              <dd>
                <code class="secret secret-value">{shown.secret}</code>
              </dd>
            </dl>
            <div class="secret-actions">
              <CopyButton text={shown.secret} label="Copy secret" />
              <button type="button" onClick={() => setShown({ state: 'hidden' })}>
                Hide secret
              </button>
            </div>
          </>
        )}
        <ErrorNotice error={reveal.error} title="Not revealed" />
      </section>

      <section class="card" aria-labelledby="rotate-heading">
        <h2 id="rotate-heading">Rotate the secret</h2>
        <p>
          Rotating makes a new secret. For a grace period (24 hours by default) the previous secret keeps signing beside the new one, so that each receiver can
          switch to the new secret without refusing a notification. If the secret leaked, end the grace period at once: only the new secret signs from then on.
        </p>
        <button type="button" ref={rotateButton} onClick={() => setConfirming(true)}>
          Rotate secret
        </button>
      </section>

      <ConfirmDialog
        open={confirming}
        title="Rotate the shared secret?"
        confirmLabel="Rotate"
        danger={endGracePeriod}
        busy={rotate.busy}
        error={rotate.error}
        onConfirm={() => rotate.run(endGracePeriod)}
        onCancel={closeDialog}
      >
        <p>
          A new secret signs every notification from now on. The previous one keeps signing beside it for the grace period, so receivers can switch over.
        </p>
        <div class="field checkbox">
          <input id={endGraceId} type="checkbox" checked={endGracePeriod} onChange={(event) => setEndGracePeriod(event.currentTarget.checked)} />{' '}
          <label for={endGraceId}>End the grace period at once</label>
          <p class="hint">For a leaked secret: receivers still holding the previous secret refuse notifications until they have the new one.</p>
        </div>
      </ConfirmDialog>
    </>
  );
}

import type { Deactivation } from '../api/client';
import { formatTime } from '../format';

const BY = {
  caller: 'by a call to the API',
  delivery: 'by the service, after a delivery failed',
} as const;

/** Why a webhook is inactive: when, by whom and the reason, or that none was recorded (made inactive before it was kept). */
export function DeactivationReason({ deactivation }: { deactivation: Deactivation | undefined }) {
  if (!deactivation) return <span class="muted">Reason not recorded</span>;
  return (
    <>
      Deactivated {BY[deactivation.by]}, {formatTime(deactivation.at)}: <span class="break">{deactivation.reason}</span>
    </>
  );
}

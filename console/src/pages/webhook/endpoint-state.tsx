import type { EndpointState } from '../../api/client';
import { formatCounted, formatTime } from '../../format';
import { StatusBadge } from '../../ui/components';

/** How the webhook's URL is doing, in words: healthy, or failing since when and whether the circuit is open. */
export function EndpointStateLine({ endpoint }: { endpoint: EndpointState }) {
  if (endpoint.status === 'healthy') {
    return (
      <p class="endpoint-state">
        Endpoint <StatusBadge status="healthy" /> the last attempt was delivered, or none was made.
      </p>
    );
  }
  return (
    <p class="endpoint-state">
      Endpoint <StatusBadge status="failing" /> since {formatTime(endpoint.failingSince)}
      {endpoint.consecutiveFailures !== undefined && `: ${formatCounted(endpoint.consecutiveFailures, 'attempt', 'attempts')} failed in a row`}.
      {endpoint.circuitOpen && ' The circuit is open: one attempt at a time probes the URL until one is delivered, and the other messages wait.'}
    </p>
  );
}

import { HttpRequestError, RpcError, RpcRequestError, TimeoutError, WebSocketRequestError } from 'viem';
import { NETWORK_ERROR_CODES, UNAVAILABLE_ERROR_NAMES } from '../errors';
import { LaggingNodeError } from './rpc';

/** The store's answers that say "later", not "never": the API's (a 503), and a conflict or a call given up. */
const TRANSIENT_STORE_ERRORS = new Set([...UNAVAILABLE_ERROR_NAMES, 'TransactionConflictException', 'AbortError']);
/** A node not reached: the API's network codes, and a DNS answer late or a socket that fetch lost. */
const NODE_NETWORK_ERROR_CODES = new Set([...NETWORK_ERROR_CODES, 'EAI_AGAIN', 'UND_ERR_SOCKET']);

/** Deeper than any library nests its errors; a cycle of causes ends here. */
const MAX_CAUSES = 20;

/** What an error (or its cause) may say of itself: viem's errors have `details`, JSON-RPC's and Node's a `code`. */
export interface ErrorCause {
  name?: string;
  message?: string;
  details?: string;
  code?: unknown;
  cause?: unknown;
}

/** An error and the errors it was caused by (its `cause`, theirs, ...), outermost first. */
export function causes(error: unknown): ErrorCause[] {
  const chain: ErrorCause[] = [];
  // Not `instanceof Object`: fetch's errors may come from another realm (a test's VM context), and an error is an object in any.
  for (let cause = error; typeof cause === 'object' && cause !== null && chain.length < MAX_CAUSES; cause = (cause as ErrorCause).cause) chain.push(cause as ErrorCause);
  return chain;
}

/**
 * Whether a failed step may succeed by asking again: the node behind or failing (any error of the
 * JSON-RPC exchange), the network, the store throttling or failing on its side. Anything else (the
 * store refusing an item, a block the code cannot handle) fails the same way every time.
 */
export function isTransientFault(error: unknown): boolean {
  for (const cause of causes(error)) {
    if (
      cause instanceof LaggingNodeError ||
      cause instanceof HttpRequestError ||
      cause instanceof TimeoutError ||
      cause instanceof RpcRequestError ||
      cause instanceof RpcError ||
      cause instanceof WebSocketRequestError
    ) {
      return true;
    }
    const { name, $fault, $retryable } = cause as { name?: string; $fault?: string; $retryable?: unknown };
    if ($fault === 'server' || $retryable || TRANSIENT_STORE_ERRORS.has(name ?? '') || isUnreachable(cause)) return true;
  }
  return false;
}

/**
 * Whether the node was behind, slow, failing on its side or out of reach: faults that never
 * quarantine a block, however long they last. A node that answers, with an error, is another matter.
 */
export function isNodeUnavailable(error: unknown): boolean {
  for (const cause of causes(error)) {
    if (cause instanceof LaggingNodeError || cause instanceof TimeoutError) return true;
    if (cause instanceof HttpRequestError) return isNodeSideHttpFault(cause);
    if (isUnreachable(cause)) return true;
  }
  return false;
}

/** An HTTP answer that is the node's trouble, not the request's: no status at all, a 5xx, or a 429. */
function isNodeSideHttpFault({ status }: HttpRequestError): boolean {
  return status === undefined || status >= 500 || status === 429;
}

/** A request that got no answer in time (viem's TimeoutError, the node's requests' own included). */
export function isTimeout(error: unknown): boolean {
  return causes(error).some((cause) => cause instanceof TimeoutError);
}

/** JSON-RPC's "limit exceeded" (EIP-1474), which providers answer when a caller goes too fast. */
const LIMIT_EXCEEDED = -32005;

/**
 * Whether the node cannot be asked now: out of reach, failing on its side (HTTP 5xx), behind, or
 * asking its callers to slow down. A reason to ask again later, never to do without what was asked
 * (a transaction's trace); a timeout or the node's error about one request is another matter.
 */
export function isNodeFailing(error: unknown): boolean {
  return causes(error).some(
    (cause) =>
      cause instanceof LaggingNodeError ||
      (cause instanceof HttpRequestError && isNodeSideHttpFault(cause)) ||
      isUnreachable(cause) ||
      cause.code === LIMIT_EXCEEDED ||
      /rate limit|too many requests/i.test(`${cause.details ?? ''} ${cause.message ?? ''}`),
  );
}

const METHOD_NOT_FOUND = -32601;
const UNSERVED_WORDS = /method .*(not (found|supported|available|allowed|enabled|whitelisted)|does not exist)|unsupported method|not (supported|whitelisted)|disabled/i;

/** The node's word that it does not serve a method: JSON-RPC's "method not found", or a provider's refusal of it. */
export function isMethodUnserved(error: unknown): boolean {
  return causes(error).some((cause) => {
    if (cause.code === METHOD_NOT_FOUND) return true;
    if (cause instanceof HttpRequestError && cause.status !== undefined && cause.status >= 400 && cause.status < 500) return cause.status !== 408 && cause.status !== 429;
    return typeof cause.code === 'number' && UNSERVED_WORDS.test(`${cause.details ?? ''} ${cause.message ?? ''}`);
  });
}

/** A node or store not reached: a network code, or fetch's own word for it. */
function isUnreachable(cause: ErrorCause): boolean {
  return NODE_NETWORK_ERROR_CODES.has(String(cause.code)) || (cause.name === 'TypeError' && cause.message === 'fetch failed');
}

/**
 * Whether the node was not reached at all (a refused or reset connection, DNS, a timeout): once it
 * answers again, it may be another node (a URL fixed, a load balancer's new backend), so it is asked
 * which chain it is before anything else.
 */
export function isNodeUnreachable(error: unknown): boolean {
  return causes(error).some((cause) => cause instanceof TimeoutError || isUnreachable(cause) || cause.message === 'bad port');
}

/** What a cause's network code means, for whoever reads the follower's status. */
const NETWORK_FAULT_KINDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (ECONNREFUSED)',
  ECONNRESET: 'connection reset (ECONNRESET)',
  UND_ERR_SOCKET: 'connection closed by the node (UND_ERR_SOCKET)',
  EPIPE: 'connection closed by the node (EPIPE)',
  ETIMEDOUT: 'connection timed out (ETIMEDOUT)',
  EHOSTUNREACH: 'host unreachable (EHOSTUNREACH)',
  ENOTFOUND: 'DNS: host not found (ENOTFOUND)',
  EAI_AGAIN: 'DNS: no answer (EAI_AGAIN)',
};

/**
 * A short category of the fault, the same for every failure of one kind, and never holding an RPC
 * URL, a host or a node's own words: "timeout", "connection refused (ECONNREFUSED)", "DNS: host not
 * found (ENOTFOUND)", "HTTP status 503", "JSON-RPC error -32000", "store error (ThrottlingException)",
 * "node behind", or what an error says of its kind (`kindOfFault`, e.g. the wrong chain's).
 */
export function faultKind(error: unknown): string {
  const chain = causes(error);
  const own = chain.find((cause): cause is ErrorCause & { kindOfFault: string } => typeof (cause as { kindOfFault?: unknown }).kindOfFault === 'string');
  if (own) return own.kindOfFault;
  if (chain.some((cause) => cause instanceof LaggingNodeError)) return 'node behind';
  if (chain.some((cause) => cause instanceof TimeoutError)) return 'timeout';
  const network = chain.find((cause) => String(cause.code) in NETWORK_FAULT_KINDS || NODE_NETWORK_ERROR_CODES.has(String(cause.code)));
  if (network) return NETWORK_FAULT_KINDS[String(network.code)] ?? `network error (${String(network.code)})`;
  const http = chain.find((cause): cause is HttpRequestError => cause instanceof HttpRequestError);
  if (http?.status !== undefined) return `HTTP status ${http.status}`;
  const rpc = chain.find((cause) => (cause instanceof RpcError || cause instanceof RpcRequestError) && typeof cause.code === 'number');
  if (rpc) return `JSON-RPC error ${String(rpc.code)}`;
  if (http && chain.some((cause) => cause.name === 'SyntaxError')) return 'not a JSON-RPC answer';
  if (chain.some((cause) => cause.message === 'bad port')) return 'connection refused by fetch (bad port)';
  if (http) return 'connection failed';
  const store = chain.find((cause) => (cause as { $metadata?: unknown }).$metadata !== undefined);
  if (store) return `store error (${store.name ?? 'unknown'})`;
  const first = chain[0];
  return first?.name && /^\w{1,60}$/.test(first.name) ? first.name : 'unknown error';
}

const MAX_DESCRIPTION_CHARS = 1000;

/** The error's name and message, without the RPC URL (it may hold a provider's key), at most 1 000 characters. */
export function describeFault(error: unknown, rpcUrl: string): string {
  // A JSON-RPC error's own words ("missing trie node ...") are viem's `details`, after its generic text for the code.
  const said = causes(error).find((cause) => cause.details)?.details;
  const message = error instanceof Error ? `${error.name}: ${said ? `${said}: ` : ''}${error.message}` : String(error);
  return message
    .split(rpcUrl)
    .join('<rpc url>')
    .split('\n')
    .filter((line) => !/URL:/.test(line))
    .slice(0, 3)
    .join(' ')
    .slice(0, MAX_DESCRIPTION_CHARS);
}

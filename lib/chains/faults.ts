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
  for (let cause = error; cause instanceof Object && chain.length < MAX_CAUSES; cause = (cause as ErrorCause).cause) chain.push(cause as ErrorCause);
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
    if (cause instanceof HttpRequestError) return cause.status === undefined || cause.status >= 500 || cause.status === 429;
    if (isUnreachable(cause)) return true;
  }
  return false;
}

/** A node or store not reached: a network code, or fetch's own word for it. */
function isUnreachable(cause: ErrorCause): boolean {
  return NODE_NETWORK_ERROR_CODES.has(String(cause.code)) || (cause instanceof TypeError && cause.message === 'fetch failed');
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

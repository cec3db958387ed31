import type { Logger } from '@aws-lambda-powertools/logger';
import { decodeAbiParameters, encodeFunctionData, hexToString, parseAbi, size, trim, type Hex } from 'viem';
import { getTokenMetadata, putTokenMetadata, type TokenMetadata } from '../store/chains';
import { stripHidden } from '../text';
import { causes, isTransientFault } from './faults';
import type { ChainNode } from './rpc';

const erc20Metadata = parseAbi(['function name() view returns (string)', 'function symbol() view returns (string)', 'function decimals() view returns (uint8)']);
const NAME = encodeFunctionData({ abi: erc20Metadata, functionName: 'name' });
const SYMBOL = encodeFunctionData({ abi: erc20Metadata, functionName: 'symbol' });
const DECIMALS = encodeFunctionData({ abi: erc20Metadata, functionName: 'decimals' });

/** What a token that does not answer (or is not a token) is named. */
const UNNAMED: TokenMetadata = { name: '', symbol: '', decimals: 0 };
const CACHED_TOKENS = 10_000;
/** What a notification carries of a token's name and symbol at most, in characters (docs/chain-follower.md). */
export const TOKEN_NAME_MAX_CHARS = 64;
export const TOKEN_SYMBOL_MAX_CHARS = 32;
/** An answer longer than this is cut before it is decoded: a contract chooses its size, up to its gas. */
const ANSWER_MAX_BYTES = 4 * TOKEN_NAME_MAX_CHARS + 64;

/**
 * Token names, symbols and decimals: read from the chain once per token (three `eth_call`s in one
 * batch), then kept in the table for every process and in memory for this one. What a contract
 * answers is bounded and cleaned (`boundedMetadata`); an answer that is not a string (a revert,
 * garbage) is "" or 0. Nothing a token answers fails a block: a call the node could not answer and
 * a failed store write name it "" this time and leave it to be read again the next time.
 */
export class TokenMetadataCache {
  private readonly known = new Map<string, TokenMetadata>();

  constructor(private readonly chainId: string, private readonly node: ChainNode, private readonly log?: Logger) {}

  /** Metadata of every address, read where not known yet; then `lookup` answers for them. */
  async load(addresses: Iterable<string>): Promise<void> {
    const missing = [...new Set([...addresses].map((address) => address.toLowerCase()))].filter((address) => !this.known.has(address));
    await Promise.all(missing.map(async (address) => this.remember(address, await this.read(address))));
  }

  lookup = (address: string): TokenMetadata => this.known.get(address.toLowerCase()) ?? UNNAMED;

  private async read(address: string): Promise<TokenMetadata | undefined> {
    const stored = await getTokenMetadata(this.chainId, address);
    if (stored) return boundedMetadata(stored);
    const answers = await Promise.all([NAME, SYMBOL, DECIMALS].map((data) => this.call(address, data)));
    if (answers.includes(NOT_ANSWERED)) return undefined;
    const [name, symbol, decimals] = answers as (Hex | undefined)[];
    const metadata = boundedMetadata({ name: text(name), symbol: text(symbol), decimals: decimalsOf(decimals) });
    try {
      await putTokenMetadata(this.chainId, address, metadata);
    } catch (error) {
      this.log?.warn('token metadata not stored; read again next time', { chainId: this.chainId, token: address, error: (error as Error).name });
      return undefined;
    }
    return metadata;
  }

  /** The call's answer; undefined when the contract reverted or failed; NOT_ANSWERED when the node did not answer. */
  private async call(to: string, data: Hex): Promise<Hex | undefined | typeof NOT_ANSWERED> {
    try {
      return await this.node.request<Hex>('eth_call', [{ to, data }, 'latest']);
    } catch (error) {
      return isTransientFault(error) && !isExecutionError(error) ? NOT_ANSWERED : undefined;
    }
  }

  private remember(address: string, metadata: TokenMetadata | undefined) {
    if (!metadata) return;
    if (this.known.size >= CACHED_TOKENS) this.known.delete(this.known.keys().next().value!);
    this.known.set(address, metadata);
  }
}

const NOT_ANSWERED = Symbol('not answered');

/** A revert, out of gas, an invalid opcode: the contract's answer, which asking again does not change. */
function isExecutionError(error: unknown): boolean {
  return causes(error).some((cause) => cause.code === 3 || /revert|out of gas|invalid opcode|execution/i.test(cause.message ?? ''));
}

/**
 * An ABI string, or the bytes32 some early tokens (MKR, SAI) return instead. Invalid UTF-8 is
 * decoded as U+FFFD; only the string's first ANSWER_MAX_BYTES bytes are decoded, wherever its offset
 * puts it, so that an answer of any size costs as much as a short one.
 */
function text(result: Hex | undefined): string {
  if (!result || result === '0x') return '';
  try {
    if (size(result) === 32) return hexToString(trim(result, { dir: 'right' }));
    const offset = BigInt(`0x${result.slice(2, 66)}`);
    if (offset + 32n > BigInt(size(result))) return '';
    const lengthAt = 2 + Number(offset) * 2;
    const length = BigInt(`0x${result.slice(lengthAt, lengthAt + 64)}`);
    const bytes = Number(length < BigInt(ANSWER_MAX_BYTES) ? length : BigInt(ANSWER_MAX_BYTES));
    const start = lengthAt + 64;
    if (result.length < start + bytes * 2) return '';
    return hexToString(`0x${result.slice(start, start + bytes * 2)}`);
  } catch {
    return '';
  }
}

function cleaned(value: unknown, maxChars: number): string {
  if (typeof value !== 'string') return '';
  return Array.from(stripHidden(value).trim()).slice(0, maxChars).join('');
}

/**
 * Metadata as notifications carry it: name and symbol without control characters, cut to
 * TOKEN_NAME_MAX_CHARS and TOKEN_SYMBOL_MAX_CHARS code points; decimals 0 to 255, else 0. Applied
 * to what the store holds too, which older versions wrote unbounded.
 */
export function boundedMetadata({ name, symbol, decimals }: TokenMetadata): TokenMetadata {
  return {
    name: cleaned(name, TOKEN_NAME_MAX_CHARS),
    symbol: cleaned(symbol, TOKEN_SYMBOL_MAX_CHARS),
    decimals: Number.isInteger(decimals) && decimals >= 0 && decimals <= 255 ? decimals : 0,
  };
}

function decimalsOf(result: Hex | undefined): number {
  if (!result || result === '0x') return 0;
  try {
    const value = decodeAbiParameters([{ type: 'uint256' }], result)[0];
    return value <= 255n ? Number(value) : 0;
  } catch {
    return 0;
  }
}

import { decodeAbiParameters, encodeFunctionData, hexToString, parseAbi, size, trim, type Hex } from 'viem';
import { getTokenMetadata, putTokenMetadata, type TokenMetadata } from '../store/chains';
import type { ChainNode } from './rpc';

const erc20Metadata = parseAbi(['function name() view returns (string)', 'function symbol() view returns (string)', 'function decimals() view returns (uint8)']);
const NAME = encodeFunctionData({ abi: erc20Metadata, functionName: 'name' });
const SYMBOL = encodeFunctionData({ abi: erc20Metadata, functionName: 'symbol' });
const DECIMALS = encodeFunctionData({ abi: erc20Metadata, functionName: 'decimals' });

/** What a token that does not answer (or is not a token) is named. */
const UNNAMED: TokenMetadata = { name: '', symbol: '', decimals: 0 };
const CACHED_TOKENS = 10_000;

/**
 * Token names, symbols and decimals: read from the chain once per token (three `eth_call`s in one
 * batch), then kept in the table for every process and in memory for this one.
 */
export class TokenMetadataCache {
  private readonly known = new Map<string, TokenMetadata>();

  constructor(private readonly chainId: string, private readonly node: ChainNode) {}

  /** Metadata of every address, read where not known yet; then `lookup` answers for them. */
  async load(addresses: Iterable<string>): Promise<void> {
    const missing = [...new Set([...addresses].map((address) => address.toLowerCase()))].filter((address) => !this.known.has(address));
    await Promise.all(missing.map(async (address) => this.remember(address, await this.read(address))));
  }

  lookup = (address: string): TokenMetadata => this.known.get(address.toLowerCase()) ?? UNNAMED;

  private async read(address: string): Promise<TokenMetadata> {
    const stored = await getTokenMetadata(this.chainId, address);
    if (stored) return stored;
    const [name, symbol, decimals] = await Promise.all([NAME, SYMBOL, DECIMALS].map((data) => this.call(address, data)));
    const metadata = { name: text(name), symbol: text(symbol), decimals: decimalsOf(decimals) };
    await putTokenMetadata(this.chainId, address, metadata);
    return metadata;
  }

  private async call(to: string, data: Hex): Promise<Hex | undefined> {
    try {
      return await this.node.request<Hex>('eth_call', [{ to, data }, 'latest']);
    } catch {
      return undefined;
    }
  }

  private remember(address: string, metadata: TokenMetadata) {
    if (this.known.size >= CACHED_TOKENS) this.known.delete(this.known.keys().next().value!);
    this.known.set(address, metadata);
  }
}

/** An ABI string, or the bytes32 some early tokens (MKR, SAI) return instead. */
function text(result: Hex | undefined): string {
  if (!result || result === '0x') return '';
  try {
    if (size(result) === 32) return hexToString(trim(result, { dir: 'right' })).replace(/\0/g, '');
    return decodeAbiParameters([{ type: 'string' }], result)[0].replace(/\0/g, '');
  } catch {
    return '';
  }
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

import { ChainNode } from '../../../lib/chains/rpc';
import { boundedMetadata, TOKEN_NAME_MAX_CHARS, TOKEN_SYMBOL_MAX_CHARS, TokenMetadataCache } from '../../../lib/chains/tokens';
import { useEmbeddedStore } from '../../support/embedded-store';
import { randomAddress } from '../../support/factories';
import { startReceiver } from '../../support/receiver';

useEmbeddedStore();

const word = (value: number) => value.toString(16).padStart(64, '0');

/** A node on loopback whose every `eth_call` answers `result`, as a token contract may. */
function nodeAnswering(result: string) {
  return startReceiver((_index, request) => {
    const calls = JSON.parse(request.body) as { id: number } | { id: number }[];
    const reply = ({ id }: { id: number }) => ({ jsonrpc: '2.0', id, result });
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(Array.isArray(calls) ? calls.map(reply) : reply(calls)) };
  });
}

describe('token metadata read from a contract', () => {
  test('a string at an offset other than 32 is decoded from its first 320 bytes alone, whatever length it claims', async () => {
    // Offset 64, a word of nothing, then a length of a megabyte that the answer does not hold: only its first bytes are read.
    const node = await nodeAnswering(`0x${word(64)}${word(0)}${word(1_000_000)}${'41'.repeat(400)}`);
    try {
      const tokens = new TokenMetadataCache('31398', new ChainNode(node.url, 'off'));
      const token = randomAddress();
      await tokens.load([token]);
      expect(tokens.lookup(token)).toEqual({ name: 'A'.repeat(TOKEN_NAME_MAX_CHARS), symbol: 'A'.repeat(TOKEN_SYMBOL_MAX_CHARS), decimals: 64 });
    } finally {
      await node.close();
    }
  });
});

describe('token metadata as notifications carry it', () => {
  test('name and symbol are cut to their length in code points, never inside a surrogate pair', () => {
    const bounded = boundedMetadata({ name: '🦊'.repeat(100), symbol: 'S'.repeat(100), decimals: 6 });
    expect(Array.from(bounded.name)).toEqual(Array(TOKEN_NAME_MAX_CHARS).fill('🦊'));
    expect(bounded.symbol).toBe('S'.repeat(TOKEN_SYMBOL_MAX_CHARS));
    expect(bounded.decimals).toBe(6);
  });

  test('control characters and bidirectional overrides are removed', () => {
    expect(boundedMetadata({ name: '\u0000Tet\u202Eher\u0007\r\n\u009B', symbol: ' USD\u200F ', decimals: 18 })).toEqual({ name: 'Tether', symbol: 'USD', decimals: 18 });
  });

  test('line and paragraph separators and every bidirectional mark are removed', () => {
    expect(boundedMetadata({ name: 'Te\u2028th\u2029er\u061c', symbol: '\u2066US\u200eD\u2069', decimals: 6 })).toEqual({ name: 'Tether', symbol: 'USD', decimals: 6 });
  });

  test('what is not a string or a decimals count (a corrupt stored item) is unknown', () => {
    expect(boundedMetadata({ name: 5 as unknown as string, symbol: undefined as unknown as string, decimals: 300 })).toEqual({ name: '', symbol: '', decimals: 0 });
  });
});

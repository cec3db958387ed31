import type { z } from 'zod';
import { createWebhookBody, listWebhooksQuery, updateWebhookBody } from '../../../lib/schemas/webhook';
import { randomAddress, randomChecksummedAddress, randomEventSignature, webhookInput, withChecksumTypo } from '../../support/factories';

// STAGE is unset here, so lib/config/runtime reads the 'local' stage (http://localhost allowed).
// webhook-prod.test.ts covers the production stage.

/** Each issue as `path: message`, for asserting what a refusal names. */
function issuesOf(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input);
  if (result.success) throw new Error(`accepted: ${JSON.stringify(input)}`);
  return result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

/** The keys the schema refused as unknown. */
function unknownKeysOf(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input);
  if (result.success) throw new Error(`accepted: ${JSON.stringify(input)}`);
  return result.error.issues.flatMap((issue) => (issue.code === 'unrecognized_keys' ? issue.keys : []));
}

const NOT_AN_ALLOWED_URL = 'url: must be an absolute https:// URL (or http:// to localhost, 127.0.0.1 or [::1]), e.g. https://example.com/webhooks';

const distinctAddresses = (count: number) => Array.from({ length: count }, randomAddress);
const distinctSignatures = (count: number) => Array.from({ length: count }, randomEventSignature);
const urlOfLength = (length: number) => {
  const base = 'https://receiver.example.com/';
  return base + 'a'.repeat(length - base.length);
};

describe('createWebhookBody', () => {
  it('fills the defaults: empty name and description, no event signatures, both flags false', () => {
    const input = webhookInput();
    expect(createWebhookBody.parse(input)).toEqual({
      url: input.url,
      chainId: input.chainId,
      eventType: 'address_activity',
      metadata: { addresses: (input.metadata as { addresses: string[] }).addresses, eventSignatures: [] },
      name: '',
      description: '',
      includeInternalTxs: false,
      includeLogs: false,
    });
  });

  it('keeps given values over the defaults', () => {
    const input = webhookInput({ name: 'n', description: 'd', includeInternalTxs: true, includeLogs: true });
    expect(createWebhookBody.parse(input)).toMatchObject({ name: 'n', description: 'd', includeInternalTxs: true, includeLogs: true });
  });

  it('lower-cases addresses and drops repeats, keeping first-seen order', () => {
    const [first, second] = distinctAddresses(2) as [string, string];
    const upper = `0x${first.slice(2).toUpperCase()}`;
    const parsed = createWebhookBody.parse(webhookInput({ metadata: { addresses: [upper, second, first, second] } }));
    expect(parsed.metadata.addresses).toEqual([first, second]);
  });

  it('lower-cases event signatures and drops repeats, keeping first-seen order', () => {
    const [first, second] = distinctSignatures(2) as [string, string];
    const upper = `0x${first.slice(2).toUpperCase()}`;
    const input = webhookInput({ metadata: { addresses: [randomAddress()], eventSignatures: [second, upper, first] } });
    expect(createWebhookBody.parse(input).metadata.eventSignatures).toEqual([second, first]);
  });

  it('requires url, chainId, eventType and metadata', () => {
    expect(issuesOf(createWebhookBody, {})).toEqual([
      'url: is required',
      'chainId: is required',
      'eventType: is required',
      'metadata: is required',
    ]);
  });

  it('refuses an empty address list', () => {
    expect(issuesOf(createWebhookBody, webhookInput({ metadata: { addresses: [] } }))).toEqual([
      'metadata.addresses: must hold at least one address',
    ]);
  });

  it('refuses an address that is not 0x and 40 hex digits', () => {
    const input = webhookInput({ metadata: { addresses: [`${randomAddress()}0`] } });
    expect(issuesOf(createWebhookBody, input)).toEqual(['metadata.addresses.0: must be 0x followed by 40 hexadecimal digits']);
  });

  it('accepts an address in its checksummed, lower-case and upper-case spellings, counting it once', () => {
    const checksummed = randomChecksummedAddress();
    const spellings = [checksummed, checksummed.toLowerCase(), `0x${checksummed.slice(2).toUpperCase()}`];
    expect(createWebhookBody.parse(webhookInput({ metadata: { addresses: spellings } })).metadata.addresses).toEqual([checksummed.toLowerCase()]);
  });

  it('refuses a mixed-case address whose EIP-55 checksum does not hold, naming it and its index', () => {
    const typo = withChecksumTypo(randomChecksummedAddress());
    expect(issuesOf(createWebhookBody, webhookInput({ metadata: { addresses: [randomAddress(), typo] } }))).toEqual([
      `metadata.addresses.1: ${typo} has a mixed-case EIP-55 checksum that does not match; check it for a typo, or send it all lower-case`,
    ]);
  });

  it('accepts 10 000 checksummed addresses', () => {
    const addresses = Array.from({ length: 10_000 }, randomChecksummedAddress);
    expect(createWebhookBody.parse(webhookInput({ metadata: { addresses } })).metadata.addresses).toEqual(addresses.map((address) => address.toLowerCase()));
  });

  it('refuses an event signature that is not 0x and 64 hex digits', () => {
    const input = webhookInput({ metadata: { addresses: [randomAddress()], eventSignatures: [randomAddress()] } });
    expect(issuesOf(createWebhookBody, input)).toEqual(['metadata.eventSignatures.0: must be 0x followed by 64 hexadecimal digits']);
  });

  it('accepts 10 000 addresses, the per-call limit', () => {
    const addresses = distinctAddresses(10_000);
    expect(createWebhookBody.parse(webhookInput({ metadata: { addresses } })).metadata.addresses).toEqual(addresses);
  });

  it('refuses 10 001 addresses', () => {
    expect(issuesOf(createWebhookBody, webhookInput({ metadata: { addresses: distinctAddresses(10_001) } }))).toEqual([
      'metadata.addresses: must hold at most 10000 distinct addresses',
    ]);
  });

  it('counts addresses after lower-casing and dropping repeats: 10 000 plus one in other case is 10 000', () => {
    const addresses = distinctAddresses(10_000);
    const input = webhookInput({ metadata: { addresses: [...addresses, `0x${addresses[0]!.slice(2).toUpperCase()}`] } });
    expect(createWebhookBody.parse(input).metadata.addresses).toEqual(addresses);
  });

  it('counts event signatures after lower-casing and dropping repeats', () => {
    const eventSignatures = distinctSignatures(100);
    const input = webhookInput({ metadata: { addresses: [randomAddress()], eventSignatures: [...eventSignatures, eventSignatures[5]!] } });
    expect(createWebhookBody.parse(input).metadata.eventSignatures).toEqual(eventSignatures);
  });

  it('accepts 100 event signatures and refuses 101', () => {
    const metadata = (count: number) => ({ addresses: [randomAddress()], eventSignatures: distinctSignatures(count) });
    expect(createWebhookBody.safeParse(webhookInput({ metadata: metadata(100) })).success).toBe(true);
    expect(issuesOf(createWebhookBody, webhookInput({ metadata: metadata(101) }))).toEqual([
      'metadata.eventSignatures: must hold at most 100 distinct event signatures',
    ]);
  });

  it('accepts a name of 256 characters and refuses 257', () => {
    expect(createWebhookBody.safeParse(webhookInput({ name: 'n'.repeat(256) })).success).toBe(true);
    expect(issuesOf(createWebhookBody, webhookInput({ name: 'n'.repeat(257) }))).toEqual(['name: must be at most 256 characters']);
  });

  it('accepts a description of 1024 characters and refuses 1025', () => {
    expect(createWebhookBody.safeParse(webhookInput({ description: 'd'.repeat(1024) })).success).toBe(true);
    expect(issuesOf(createWebhookBody, webhookInput({ description: 'd'.repeat(1025) }))).toEqual([
      'description: must be at most 1024 characters',
    ]);
  });

  it('accepts a url of 2048 characters and refuses 2049', () => {
    expect(urlOfLength(2048)).toHaveLength(2048);
    expect(createWebhookBody.safeParse(webhookInput({ url: urlOfLength(2048) })).success).toBe(true);
    expect(issuesOf(createWebhookBody, webhookInput({ url: urlOfLength(2049) }))).toEqual(['url: must be at most 2048 characters']);
  });

  it.each(['https://receiver.example.com/hooks', 'https://receiver.example.com:8443/a?b=c', 'https://93.184.216.34/x'])(
    'accepts the https url %s',
    (url) => {
      expect(createWebhookBody.parse(webhookInput({ url })).url).toBe(url);
    },
  );

  it.each(['http://localhost:3000/hooks', 'http://127.0.0.1/hooks', 'http://[::1]:8080/'])(
    "accepts the http url %s to this machine in stage 'local'",
    (url) => {
      expect(createWebhookBody.parse(webhookInput({ url })).url).toBe(url);
    },
  );

  it.each(['http://receiver.example.com/hooks', 'http://localhost.example.com/', 'http://10.0.0.1/'])(
    'refuses the plain http url %s',
    (url) => {
      expect(issuesOf(createWebhookBody, webhookInput({ url }))).toEqual([NOT_AN_ALLOWED_URL]);
    },
  );

  it.each(['ftp://receiver.example.com/', 'receiver.example.com/hooks', 'https:receiver.example.com/', '', 'not a url', ' /hooks '])(
    'refuses %p, which is not an absolute http(s) url',
    (url) => {
      expect(issuesOf(createWebhookBody, webhookInput({ url }))).toEqual([NOT_AN_ALLOWED_URL]);
    },
  );

  it.each(['https:///path', 'https:////receiver.example.com/', 'https:\\\\receiver.example.com/', 'https://?x', 'https://#f'])(
    'refuses %p, which has no host right after //',
    (url) => {
      expect(issuesOf(createWebhookBody, webhookInput({ url }))).toEqual([NOT_AN_ALLOWED_URL]);
    },
  );

  it.each([
    ['leading and trailing spaces', '  https://receiver.example.com/h  '],
    ['a newline in the host', 'https://receiver.exa\nmple.com/h'],
    ['a tab in the path', 'https://receiver.example.com/a\tb'],
    ['a space in the path', 'https://receiver.example.com/a b'],
    ['a NUL', 'https://receiver.example.com/\u0000'],
    ['a no-break space', 'https://receiver.example.com/\u00a0'],
  ])('refuses a url with %s', (_, url) => {
    expect(issuesOf(createWebhookBody, webhookInput({ url }))).toEqual(['url: must not contain whitespace or control characters']);
  });

  it.each([
    ['HTTPS://Receiver.Example.COM/hooks', 'https://receiver.example.com/hooks'],
    ['https://receiver.example.com', 'https://receiver.example.com/'],
    ['https://receiver.example.com:443/a/./b/../c', 'https://receiver.example.com/a/c'],
    ['https://bücher.example/ü?q=ä', 'https://xn--bcher-kva.example/%C3%BC?q=%C3%A4'],
    ['http://LOCALHOST:3000', 'http://localhost:3000/'],
  ])('stores %s in its normalized form %s', (url, normalized) => {
    expect(createWebhookBody.parse(webhookInput({ url })).url).toBe(normalized);
  });

  it('refuses a url that normalization makes longer than 2048 characters', () => {
    const url = `https://receiver.example.com/${'ü'.repeat(1000)}`;
    expect(url.length).toBeLessThanOrEqual(2048);
    expect(issuesOf(createWebhookBody, webhookInput({ url }))).toEqual(['url: must be at most 2048 characters once normalized']);
  });

  it.each([
    ['NUL', 'a\u0000b', 'control characters (U+0000 at position 2)'],
    ['a newline', 'a\nb', 'control characters (U+000A at position 2)'],
    ['a tab', 'a\tb', 'control characters (U+0009 at position 2)'],
    ['DEL', 'a\u007fb', 'control characters (U+007F at position 2)'],
    ['a C1 control', 'a\u0085b', 'control characters (U+0085 at position 2)'],
    ['an unpaired high surrogate', 'a\ud800b', 'unpaired surrogates (U+D800 at position 2)'],
    ['an unpaired low surrogate', 'a\udc00', 'unpaired surrogates (U+DC00 at position 2)'],
    ['a zero-width space', 'npm start\u200b', 'invisible or direction-changing characters (U+200B at position 10)'],
    ['a right-to-left override', 'invoice \u202egnp.exe', 'invisible or direction-changing characters (U+202E at position 9)'],
    ['a left-to-right isolate', '\u2066ci', 'invisible or direction-changing characters (U+2066 at position 1)'],
    ['a right-to-left mark', 'ci\u200f', 'invisible or direction-changing characters (U+200F at position 3)'],
    ['a byte order mark', 'ci\ufeff', 'invisible or direction-changing characters (U+FEFF at position 3)'],
    ['a soft hyphen', 'c\u00adi', 'invisible or direction-changing characters (U+00AD at position 2)'],
    ['a zero-width joiner between letters', 'c\u200di', 'invisible or direction-changing characters (U+200D at position 2)'],
    ['a Hangul filler', 'ci\u3164', 'invisible or direction-changing characters (U+3164 at position 3)'],
    ['a tag character', '🏦\u{e0041}', 'invisible or direction-changing characters (U+E0041 at position 2)'],
    ['a line separator', 'a\u2028b', 'line or paragraph separators (U+2028 at position 2)'],
    ['a paragraph separator', 'a\u2029b', 'line or paragraph separators (U+2029 at position 2)'],
  ])('refuses a name with %s, naming it and where it is', (_, name, refused) => {
    expect(issuesOf(createWebhookBody, webhookInput({ name }))).toEqual([`name: must not contain ${refused}`]);
  });

  it.each([
    ['NUL', 'a\u0000b', 'control characters other than line breaks and tabs (U+0000 at position 2)'],
    ['a vertical tab', 'a\u000bb', 'control characters other than line breaks and tabs (U+000B at position 2)'],
    ['an escape', '\u001b[31mred', 'control characters other than line breaks and tabs (U+001B at position 1)'],
    ['an unpaired surrogate', 'a\ud83d', 'unpaired surrogates (U+D83D at position 2)'],
    ['a zero-width space', 'line one\nline\u200b two', 'invisible or direction-changing characters (U+200B at position 14)'],
    ['a pop directional isolate', 'a\u2069', 'invisible or direction-changing characters (U+2069 at position 2)'],
    ['a line separator', 'a\u2028b', 'line or paragraph separators (U+2028 at position 2)'],
  ])('refuses a description with %s, naming it and where it is', (_, description, refused) => {
    expect(issuesOf(createWebhookBody, webhookInput({ description }))).toEqual([`description: must not contain ${refused}`]);
  });

  it('accepts emoji joined by zero-width joiners or with presentation selectors in a name and a description', () => {
    const emoji = '👩‍💻 🏳️‍🌈 ❤️‍🔥 🧑🏽‍💻 1️⃣';
    expect(createWebhookBody.parse(webhookInput({ name: emoji, description: emoji }))).toMatchObject({ name: emoji, description: emoji });
  });

  it('accepts emoji (surrogate pairs) and other scripts in a name, and line breaks and tabs in a description', () => {
    const parsed = createWebhookBody.parse(webhookInput({ name: 'tréso 🏦 財務', description: 'line one\r\nline\ttwo\n' }));
    expect(parsed).toMatchObject({ name: 'tréso 🏦 財務', description: 'line one\r\nline\ttwo\n' });
  });

  it.each(['https://user:pass@receiver.example.com/', 'https://token@receiver.example.com/', 'http://user:pass@localhost/'])(
    'refuses the url %s, which carries credentials',
    (url) => {
      expect(issuesOf(createWebhookBody, webhookInput({ url }))).toEqual(['url: must not contain credentials']);
    },
  );

  it('refuses an eventType other than address_activity', () => {
    expect(issuesOf(createWebhookBody, webhookInput({ eventType: 'token_transfer' }))).toEqual([
      "eventType: must be 'address_activity'",
    ]);
  });

  it('refuses a status on create: every new webhook starts active', () => {
    expect(unknownKeysOf(createWebhookBody, webhookInput({ status: 'inactive' }))).toEqual(['status']);
  });
});

describe('updateWebhookBody', () => {
  it('refuses an empty body', () => {
    expect(issuesOf(updateWebhookBody, {})).toEqual([
      ': must set at least one of name, description, url, status, includeInternalTxs, includeLogs, metadata.eventSignatures',
    ]);
  });

  it('refuses a metadata that sets nothing', () => {
    expect(issuesOf(updateWebhookBody, { metadata: {} })).toEqual([
      ': must set at least one of name, description, url, status, includeInternalTxs, includeLogs, metadata.eventSignatures',
    ]);
  });

  it('accepts a single field and adds no defaults for the others', () => {
    expect(updateWebhookBody.parse({ status: 'inactive' })).toEqual({ status: 'inactive' });
  });

  it('refuses metadata.addresses, which the addresses operations change', () => {
    expect(issuesOf(updateWebhookBody, { metadata: { addresses: [randomAddress()] } })).toEqual([
      'metadata.addresses: cannot be changed by PATCH: add or remove addresses with PATCH or DELETE /v1/webhooks/{id}/addresses',
    ]);
  });

  it('lower-cases and de-duplicates event signatures', () => {
    const signature = randomEventSignature();
    const upper = `0x${signature.slice(2).toUpperCase()}`;
    expect(updateWebhookBody.parse({ metadata: { eventSignatures: [upper, signature] } })).toEqual({
      metadata: { eventSignatures: [signature] },
    });
  });

  it('applies the same limits as create', () => {
    expect(issuesOf(updateWebhookBody, { name: 'n\u0000', metadata: { eventSignatures: distinctSignatures(101) } })).toEqual([
      'name: must not contain control characters (U+0000 at position 2)',
      'metadata.eventSignatures: must hold at most 100 distinct event signatures',
    ]);
  });

  it('applies the same url rules as create', () => {
    expect(issuesOf(updateWebhookBody, { url: 'http://receiver.example.com/' })).toEqual([NOT_AN_ALLOWED_URL]);
    expect(issuesOf(updateWebhookBody, { url: 'not a url' })).toEqual([NOT_AN_ALLOWED_URL]);
    expect(issuesOf(updateWebhookBody, { url: 'https://u:p@receiver.example.com/' })).toEqual(['url: must not contain credentials']);
    expect(issuesOf(updateWebhookBody, { url: ' https://receiver.example.com/' })).toEqual([
      'url: must not contain whitespace or control characters',
    ]);
    expect(updateWebhookBody.parse({ url: 'https://Receiver.example.com' })).toEqual({ url: 'https://receiver.example.com/' });
  });

  it("refuses a status other than 'active' or 'inactive'", () => {
    expect(issuesOf(updateWebhookBody, { status: 'paused' })).toEqual(["status: must be 'active' or 'inactive'"]);
  });

  it('refuses changes to id and createdAt', () => {
    expect(unknownKeysOf(updateWebhookBody, { name: 'n', id: 'x', createdAt: 1 })).toEqual(['id', 'createdAt']);
  });
});

describe('listWebhooksQuery', () => {
  it('defaults pageSize to 10 and leaves status and pageToken absent', () => {
    expect(listWebhooksQuery.parse({})).toEqual({ pageSize: 10 });
  });

  it.each([
    ['1', 1],
    ['10', 10],
    ['100', 100],
  ])('reads pageSize %p as the number %i', (pageSize, expected) => {
    expect(listWebhooksQuery.parse({ pageSize }).pageSize).toBe(expected);
  });

  it.each(['0', '101', '-1', '1.5', '1e2', 'ten', ' 5', '1000'])('refuses pageSize %p', (pageSize) => {
    expect(issuesOf(listWebhooksQuery, { pageSize })).toEqual(['pageSize: must be an integer from 1 to 100']);
  });

  it.each(['active', 'inactive'])('accepts status %s', (status) => {
    expect(listWebhooksQuery.parse({ status })).toEqual({ pageSize: 10, status });
  });

  it.each(['ACTIVE', 'all', 'deleted'])('refuses status %p', (status) => {
    expect(issuesOf(listWebhooksQuery, { status })).toEqual(["status: must be 'active' or 'inactive'"]);
  });

  it('passes pageToken through as given', () => {
    expect(listWebhooksQuery.parse({ pageToken: 'AbC_-1' })).toEqual({ pageSize: 10, pageToken: 'AbC_-1' });
  });

  it('leaves judging a long pageToken to the page-token codec', () => {
    const pageToken = 'a'.repeat(1025);
    expect(listWebhooksQuery.parse({ pageToken })).toEqual({ pageSize: 10, pageToken });
  });

  it('refuses unknown parameters', () => {
    expect(unknownKeysOf(listWebhooksQuery, { limit: '5' })).toEqual(['limit']);
  });
});

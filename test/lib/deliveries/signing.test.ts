import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import { canonicalize } from 'json-canonicalize';
import { Webhook } from 'standardwebhooks';
import {
  canonicalBody,
  canonicalJson,
  envelopeAround,
  signatureHeaders,
  standardWebhooksSecret,
  verifyNotification,
  type SigningSecrets,
} from '../../../lib/deliveries/signing';

const ROOT = path.resolve(__dirname, '../../..');
/**
 * The spec's published example body: the test vector is computed over it, so it is read, not
 * rebuilt. A copy of ../shared/spec/fixtures/, so that a clone alone runs the tests.
 */
const SPEC_EXAMPLE = path.join(ROOT, 'test/fixtures/hosted-address-activity-example.json');
const PYTHON_SNIPPET = path.join(__dirname, 'receiver-snippets/verify.py');
const VECTOR_SECRET = 'c13cc017c4ed63bcc842c8edfb49df37512280326a32826de3b885340b8a3d53';
const VECTOR_SIGNATURE = 'yPhtlxGBvVmPQ2rQXJWr6awB7AJOHgPr7o9jcOVAWlk=';

const randomSecret = () => randomBytes(32).toString('hex');
const unixNow = () => Math.floor(Date.now() / 1000);
const hmacBase64 = (hexSecret: string, data: string) => createHmac('sha256', Buffer.from(hexSecret, 'hex')).update(data).digest('base64');

/** An address_activity message, its keys deliberately out of canonical order. */
function addressActivity(tokenName = 'Tether USD'): Record<string, unknown> {
  const txHash = `0x${randomBytes(32).toString('hex')}`;
  return {
    webhookId: randomUUID(),
    eventType: 'address_activity',
    messageId: randomUUID(),
    event: {
      transaction: {
        txHash,
        blockNumber: '45396106',
        blockTimestamp: 1715621587,
        value: '0',
        type: 2,
        erc20Transfers: [
          {
            transactionHash: txHash,
            type: 'ERC20',
            value: '3331042921',
            logIndex: 3,
            erc20Token: { symbol: 'USDt', name: tokenName, decimals: 6, address: `0x${randomBytes(20).toString('hex')}`, valueWithDecimals: '3331.042921' },
          },
        ],
      },
      logs: [{ topic0: `0x${randomBytes(32).toString('hex')}`, address: `0x${randomBytes(20).toString('hex')}`, data: '0x', logIndex: 3, removed: false }],
    },
  };
}

/** A message as the dispatcher sends it: the canonical body and its headers. */
function signed(message: Record<string, unknown>, secrets: SigningSecrets, timestamp = unixNow()) {
  const body = canonicalBody(message);
  return { body, headers: signatureHeaders({ body, messageId: message.messageId as string, timestamp, secrets }) };
}

describe('signing', () => {
  it("reproduces the spec's test vector: 2,485 canonical bytes, x-signature yPht…Wlk=", () => {
    const example: unknown = JSON.parse(readFileSync(SPEC_EXAMPLE, 'utf8'));
    const body = canonicalBody(example);
    expect(Buffer.byteLength(body)).toBe(2485);
    expect(body).toContain('"topic3":null');
    const headers = signatureHeaders({ body, messageId: 'bc9732db-2430-4296-afc3-c51267beb14a', timestamp: unixNow(), secrets: { current: VECTOR_SECRET } });
    expect(headers['x-signature']).toBe(VECTOR_SIGNATURE);
  });

  it('writes canonical JSON: keys sorted at every depth, no whitespace', () => {
    expect(canonicalBody({ b: [{ d: 1, c: 'x' }], a: { f: true, e: null } })).toBe('{"a":{"e":null,"f":true},"b":[{"c":"x","d":1}]}');
  });

  it("puts an envelope around its event's canonical text as canonicalBody writes the whole envelope, byte for byte", () => {
    const odd = ['', 'é', '日本語', '😀', '"', '\\', '\n\t\u0000\u001f\u007f', '\u2028\u2029', '</script>', '{"event":1}', ',"eventType":'];
    const envelopes = [addressActivity(), addressActivity('Ünïcödé "quoted" \\ 💸')].map(({ event, ...ids }) => ({ ids, event }));
    for (const [index, text] of odd.entries()) {
      const ids = { webhookId: `${text}${randomUUID()}`, eventType: text || 'address_activity', messageId: `${randomUUID()}${text}` };
      envelopes.push({ ids, event: { [text]: text, é: [text, index, -0, 1e21, 0.1, null, true], nested: { z: text, a: { [text]: index } } } });
    }
    for (const { ids, event } of envelopes) {
      const { before, after } = envelopeAround(ids as never);
      expect(before + canonicalJson(event) + after).toBe(canonicalBody({ ...ids, event }));
    }
  });

  it('signs x-signature as base64 HMAC-SHA256 of the body, checked with node:crypto', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity(), { current: secret });
    expect(headers['x-signature']).toBe(hmacBase64(secret, body));
  });

  it('signs webhook-signature as v1, + base64 HMAC-SHA256 of id.timestamp.body, checked with node:crypto', () => {
    const secret = randomSecret();
    const message = addressActivity();
    const { body, headers } = signed(message, { current: secret }, 1_700_000_000);
    expect(headers['webhook-id']).toBe(message.messageId);
    expect(headers['webhook-timestamp']).toBe('1700000000');
    expect(headers['webhook-signature']).toBe(`v1,${hmacBase64(secret, `${message.messageId as string}.1700000000.${body}`)}`);
  });

  it("is accepted by the standardwebhooks library's Webhook.verify with the whsec_ secret", () => {
    const secret = randomSecret();
    const message = addressActivity();
    const { body, headers } = signed(message, { current: secret });
    expect(new Webhook(standardWebhooksSecret(secret)).verify(body, headers)).toEqual(message);
  });

  it('gives the secret in whsec_ form: base64 of the hex-decoded key', () => {
    expect(standardWebhooksSecret(VECTOR_SECRET)).toBe('whsec_wTzAF8TtY7zIQsjt+0nfN1EigDJqMoJt47iFNAuKPVM=');
  });

  it('during a grace period, signs with the current then the previous secret, and a receiver holding either verifies', () => {
    const [current, previous] = [randomSecret(), randomSecret()];
    const message = addressActivity();
    const { body, headers } = signed(message, { current, previous });
    const signatures = headers['webhook-signature'].split(' ');
    expect(signatures).toEqual([
      `v1,${hmacBase64(current, `${message.messageId as string}.${headers['webhook-timestamp']}.${body}`)}`,
      `v1,${hmacBase64(previous, `${message.messageId as string}.${headers['webhook-timestamp']}.${body}`)}`,
    ]);
    expect(new Webhook(standardWebhooksSecret(previous)).verify(body, headers)).toEqual(message);
    expect(new Webhook(standardWebhooksSecret(current)).verify(body, headers)).toEqual(message);
    // x-signature has room for one signature: the current secret's.
    expect(headers['x-signature']).toBe(hmacBase64(current, body));
    expect(() => new Webhook(standardWebhooksSecret(randomSecret())).verify(body, headers)).toThrow('No matching signature found');
  });

  it('verifies for a receiver that hashes the raw bytes and for one that re-canonicalizes the parsed body', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity('Ünïcødé 🚀'), { current: secret });
    expect(hmacBase64(secret, body)).toBe(headers['x-signature']);
    const reparsed: unknown = JSON.parse(JSON.stringify(JSON.parse(body), null, 2));
    expect(hmacBase64(secret, canonicalize(reparsed))).toBe(headers['x-signature']);
  });

  it('refuses to sign with a secret that is not 64 hex characters', () => {
    const body = canonicalBody(addressActivity());
    for (const current of ['', 'abc', `${randomSecret()}0`, `${randomSecret().slice(2)}zz`]) {
      expect(() => signatureHeaders({ body, messageId: randomUUID(), timestamp: unixNow(), secrets: { current } })).toThrow('64 hex characters');
    }
  });
});

describe('verifyNotification', () => {
  it('holds for both signatures of a signed notification, whatever the case of the header names', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity(), { current: secret });
    expect(verifyNotification({ rawBody: body, headers, secret })).toEqual({ xSignature: true, standardWebhooks: true });
    const shouted = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]));
    expect(verifyNotification({ rawBody: body, headers: shouted, secret })).toEqual({ xSignature: true, standardWebhooks: true });
  });

  it('fails both for a tampered body, saying why', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity(), { current: secret });
    const result = verifyNotification({ rawBody: body.replace('"value":"0"', '"value":"1"'), headers, secret });
    expect(result).toEqual({ xSignature: false, standardWebhooks: false, error: expect.stringContaining('x-signature: does not match the body') });
    expect(result.error).toContain('webhook-signature: No matching signature found');
  });

  it('fails both with the wrong secret', () => {
    const { body, headers } = signed(addressActivity(), { current: randomSecret() });
    expect(verifyNotification({ rawBody: body, headers, secret: randomSecret() })).toMatchObject({ xSignature: false, standardWebhooks: false });
  });

  it('refuses webhook-signature for an attempt older than 5 minutes; x-signature has no timestamp', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity(), { current: secret }, unixNow() - 301);
    expect(verifyNotification({ rawBody: body, headers, secret })).toEqual({
      xSignature: true,
      standardWebhooks: false,
      error: 'webhook-signature: Message timestamp too old',
    });
  });

  it('does not throw on missing headers, a body that is not JSON, or a malformed secret', () => {
    const secret = randomSecret();
    expect(verifyNotification({ rawBody: '{}', headers: {}, secret })).toEqual({
      xSignature: false,
      standardWebhooks: false,
      error: 'x-signature: missing; webhook-signature: Missing required headers',
    });
    const { headers } = signed(addressActivity(), { current: secret });
    expect(verifyNotification({ rawBody: 'not json', headers, secret })).toMatchObject({ xSignature: false, error: expect.stringContaining('not JSON') });
    expect(verifyNotification({ rawBody: '{}', headers, secret: 'nope' })).toEqual({
      xSignature: false,
      standardWebhooks: false,
      error: 'secret: a shared secret is 64 hex characters',
    });
  });
});

describe('a Python receiver, standard library only', () => {
  /** Runs docs/receiving.md's Python snippet, as is, on each case; returns [x-signature ok, webhook-signature ok] per case. */
  function runPythonSnippet(cases: { body: string; headers: Record<string, string>; secret: string }[]): [boolean, boolean][] {
    const harness = [
      readFileSync(PYTHON_SNIPPET, 'utf8'),
      'import sys',
      'cases = json.load(sys.stdin)',
      'print(json.dumps([[verify_x_signature(c["body"].encode(), c["headers"], c["secret"]),',
      '                   verify_webhook_signature(c["body"].encode(), c["headers"], c["secret"])] for c in cases]))',
    ].join('\n');
    const run = spawnSync('python3', ['-c', harness], { input: JSON.stringify(cases), encoding: 'utf8' });
    if ((run.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
      throw new Error('python3 is not installed: this test runs docs/receiving.md\'s Python receiver and needs it (CI has it)');
    }
    if (run.status !== 0) throw new Error(`python3 failed (${run.status}):\n${run.stderr}`);
    return JSON.parse(run.stdout) as [boolean, boolean][];
  }

  it('verifies our x-signature and webhook-signature for an ASCII body, and refuses a tampered one or another secret', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity(), { current: secret });
    expect(/^[\x20-\x7e]*$/.test(body)).toBe(true);
    expect(
      runPythonSnippet([
        { body, headers, secret },
        { body: body.replace('"value":"0"', '"value":"1"'), headers, secret },
        { body, headers, secret: randomSecret() },
      ]),
    ).toEqual([
      [true, true],
      [false, false],
      [false, false],
    ]);
  });

  it('verifies a body that is not ASCII, and either secret during a grace period', () => {
    const [current, previous] = [randomSecret(), randomSecret()];
    const { body, headers } = signed(addressActivity('Ünïcødé 🚀 "quoted"\n'), { current, previous });
    expect(runPythonSnippet([{ body, headers, secret: current }, { body, headers, secret: previous }])).toEqual([
      [true, true],
      [false, true],
    ]);
  });

  it('refuses webhook-signature for an attempt older than 5 minutes', () => {
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity(), { current: secret }, unixNow() - 301);
    expect(runPythonSnippet([{ body, headers, secret }])).toEqual([[true, false]]);
  });
});

describe('docs/receiving.md\'s "Receiving notifications" section', () => {
  const readme = readFileSync(path.join(ROOT, 'docs/receiving.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Receiving notifications'), readme.indexOf('\n## ', readme.indexOf('## Receiving notifications') + 1));

  /** The fenced block that follows `<!-- snippet: <name> ... -->`. */
  function snippet(name: string): string {
    const found = new RegExp(`<!-- snippet: ${name}\\b[^>]*-->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(section);
    if (!found) throw new Error(`docs/receiving.md has no snippet '${name}' under "## Receiving notifications"`);
    return found[1]!;
  }

  /** Evaluates a Node snippet as a receiver's CommonJS module would run it, its packages resolved from this project. */
  function nodeSnippetFunction<F>(name: string, functionName: string): F {
    const run = vm.compileFunction(`${snippet(name)}\nreturn ${functionName};`, ['require'], { filename: `docs/receiving.md#${name}` });
    return run(createRequire(path.join(ROOT, 'package.json'))) as F;
  }

  it('recommends webhook-signature first, and x-signature after it for receivers of the hosted API', () => {
    const first = (text: string, ...names: string[]) => names.map((name) => text.indexOf(name));
    const [standardWebhooks, xSignature] = first(section, '<!-- snippet: verify-node-standardwebhooks', '<!-- snippet: verify-node-x-signature');
    expect(standardWebhooks).toBeGreaterThan(-1);
    expect(standardWebhooks).toBeLessThan(xSignature!);
    const [pythonStandardWebhooks, pythonXSignature] = first(snippet('verify-python'), 'def verify_webhook_signature', 'def verify_x_signature');
    expect(pythonStandardWebhooks).toBeGreaterThan(-1);
    expect(pythonStandardWebhooks).toBeLessThan(pythonXSignature!);
    expect(section).toMatch(/\| `webhook-signature` \|[^\n]*\*\*check this one\*\*/);
    expect(section.indexOf('| `webhook-signature` |')).toBeLessThan(section.indexOf('| `x-signature` |'));
  });

  it('holds the Python snippet file verbatim', () => {
    expect(snippet('verify-python')).toBe(readFileSync(PYTHON_SNIPPET, 'utf8'));
  });

  it('states the test vector the signing module reproduces', () => {
    expect(section).toContain(`\`${VECTOR_SECRET}\``);
    expect(section).toContain(`\`x-signature: ${VECTOR_SIGNATURE}\``);
    expect(section).toContain('2,485-byte');
  });

  it("runs its Node x-signature snippet: a signed notification holds, a tampered one or another secret does not", () => {
    const verifyXSignature = nodeSnippetFunction<(rawBody: string, headers: Record<string, string>, secretHex: string) => boolean>(
      'verify-node-x-signature',
      'verifyXSignature',
    );
    const secret = randomSecret();
    const { body, headers } = signed(addressActivity('Ünïcødé 🚀'), { current: secret });
    expect(verifyXSignature(body, headers, secret)).toBe(true);
    expect(verifyXSignature(body.replace('"value":"0"', '"value":"1"'), headers, secret)).toBe(false);
    expect(verifyXSignature(body, headers, randomSecret())).toBe(false);
    expect(verifyXSignature(body, { ...headers, 'x-signature': '' }, secret)).toBe(false);
  });

  it('runs its Node standardwebhooks snippet: it returns the notification, and throws for a tampered one', () => {
    const verifyStandardWebhook = nodeSnippetFunction<(rawBody: string, headers: Record<string, string>, secretHex: string) => unknown>(
      'verify-node-standardwebhooks',
      'verifyStandardWebhook',
    );
    const secret = randomSecret();
    const message = addressActivity();
    const { body, headers } = signed(message, { current: randomSecret(), previous: secret });
    expect(verifyStandardWebhook(body, headers, secret)).toEqual(message);
    expect(() => verifyStandardWebhook(body.replace('"value":"0"', '"value":"1"'), headers, secret)).toThrow('No matching signature found');
  });

  it('tells how to run the receiver CLI', () => {
    expect(section).toContain('npm run receiver -- --port 4000 --key-file <file holding your key>');
  });
});

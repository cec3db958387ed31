import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http';
import net, { type AddressInfo, type LookupFunction } from 'node:net';
import { sendAttempt, type AttemptRequest } from '../../../lib/deliveries/send';
import type { Resolver } from '../../../lib/deliveries/target-guard';

// No packet may leave loopback, even when the guard is broken: every socket goes through a
// tripwire that lets through only loopback addresses, and records what it saw.
const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
const isLoopback = (address: string) => loopback.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');

let connectSpy: jest.SpyInstance;
/** Successful lookup answers, as `host → addresses`: the guard's refusals never get here. */
let lookupAnswers: string[];
/** Connections the tripwire stopped because they would have left loopback. */
let blocked: string[];

beforeEach(() => {
  lookupAnswers = [];
  blocked = [];
  const connect = net.Socket.prototype.connect;
  connectSpy = jest.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    // http's agent passes [options, callback] as one normalized array; tls passes options.
    const options = (Array.isArray(args[0]) ? args[0][0] : args[0]) as net.TcpNetConnectOpts;
    const host = options.host ?? 'localhost';
    if (net.isIP(host) && !isLoopback(host)) {
      blocked.push(host);
      // Failed once http has its listeners on the socket, as a refused connect would be.
      setImmediate(() => this.destroy(new Error('tripwire: connect')));
      return this;
    }
    // The guard refuses inside the lookup, so the lookup's answer is the last point before a connect.
    const lookup = options.lookup;
    if (lookup) {
      options.lookup = ((hostname, lookupOptions, callback) =>
        lookup(hostname, lookupOptions, (error, address, family) => {
          if (error) return callback(error, address, family);
          const addresses = typeof address === 'string' ? [address] : address.map((each) => each.address);
          lookupAnswers.push(`${hostname} → ${addresses.join(' ')}`);
          if (addresses.every(isLoopback)) return callback(null, address, family);
          blocked.push(...addresses);
          callback(new Error('tripwire: lookup'), '');
        })) as LookupFunction;
    }
    return connect.apply(this, args as Parameters<typeof connect>);
  });
});

afterEach(() => {
  connectSpy.mockRestore();
  expect(blocked).toEqual([]);
});

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A real receiver on 127.0.0.1 that answers with `handler` once a request's body is in. */
async function listen(handler: RequestListener = (_request, response) => response.end()) {
  const received: Received[] = [];
  let connections = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks) });
      handler(request, response);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  closers.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${port}/hook`, port, received, connections: () => connections };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const answering =
  (status: number, headers: Record<string, string> = {}, body = ''): RequestListener =>
  (_request, response) =>
    response.writeHead(status, headers).end(body);

const resolvingTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));

const BODY = '{"messageId":"7d1c","note":"déjà vu ✓"}';

function attempt(url: string, overrides: Partial<AttemptRequest> = {}) {
  return sendAttempt({
    url,
    body: BODY,
    headers: { 'content-type': 'application/json', 'x-signature': 'c2lnbmF0dXJl', 'user-agent': 'webhook-test/1' },
    timeoutMs: 5000,
    loopback: { servicePorts: [] },
    ...overrides,
  });
}

describe('sendAttempt to a receiver', () => {
  it('delivers on 200: the exact body bytes and the headers arrive, and the response body is kept', async () => {
    const receiver = await listen(answering(200, { 'content-type': 'application/json' }, '{"ok":true}'));
    const outcome = await attempt(receiver.url);
    expect(outcome).toEqual({ delivered: true, statusCode: 200, responseBody: '{"ok":true}', durationMs: expect.any(Number) });
    const [request] = receiver.received;
    expect(request!.body.equals(Buffer.from(BODY, 'utf8'))).toBe(true);
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-signature': 'c2lnbmF0dXJl',
      'user-agent': 'webhook-test/1',
      'content-length': String(Buffer.byteLength(BODY)),
    });
  });

  it('delivers on 204, without a response body', async () => {
    const receiver = await listen(answering(204));
    expect(await attempt(receiver.url)).toEqual({ delivered: true, statusCode: 204, durationMs: expect.any(Number) });
  });

  it.each([500, 410, 400])('fails on %i, keeping the response body', async (status) => {
    const receiver = await listen(answering(status, {}, 'no thanks'));
    expect(await attempt(receiver.url)).toEqual({ delivered: false, statusCode: status, error: `HTTP ${status}`, responseBody: 'no thanks', durationMs: expect.any(Number) });
  });

  it('does not follow a redirect', async () => {
    const elsewhere = await listen();
    const receiver = await listen(answering(302, { location: elsewhere.url }));
    expect(await attempt(receiver.url)).toMatchObject({ delivered: false, statusCode: 302, error: 'redirect (302) not followed' });
    expect(elsewhere.received).toHaveLength(0);
  });

  it('reads Retry-After in seconds on a 429', async () => {
    const receiver = await listen(answering(429, { 'retry-after': '7' }));
    expect(await attempt(receiver.url)).toMatchObject({ delivered: false, statusCode: 429, error: 'HTTP 429', retryAfterSeconds: 7 });
  });

  it('reads Retry-After as an HTTP-date on a 503', async () => {
    const receiver = await listen(answering(503, { 'retry-after': new Date(Date.now() + 120_000).toUTCString() }));
    const outcome = await attempt(receiver.url);
    expect(outcome).toMatchObject({ delivered: false, statusCode: 503, error: 'HTTP 503' });
    expect(outcome.retryAfterSeconds).toBeGreaterThanOrEqual(118);
    expect(outcome.retryAfterSeconds).toBeLessThanOrEqual(120);
  });

  it('ignores Retry-After on other statuses', async () => {
    const receiver = await listen(answering(500, { 'retry-after': '7' }));
    expect((await attempt(receiver.url)).retryAfterSeconds).toBeUndefined();
  });

  it('times out when the receiver never answers', async () => {
    const receiver = await listen(() => undefined);
    const outcome = await attempt(receiver.url, { timeoutMs: 300 });
    expect(outcome).toEqual({ delivered: false, error: 'timeout after 300 ms', durationMs: expect.any(Number) });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
    expect(outcome.durationMs).toBeLessThan(2000);
  });

  it('takes the status of a receiver that answers and then stalls its body, with what came of the body, at the timeout', async () => {
    const receiver = await listen((_request, response) => {
      response.writeHead(200);
      response.write('partial');
    });
    const outcome = await attempt(receiver.url, { timeoutMs: 300 });
    expect(outcome).toEqual({ delivered: true, statusCode: 200, responseBody: 'partial', durationMs: expect.any(Number) });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
    const failing = await listen((_request, response) => {
      response.writeHead(500);
      response.write('partial');
    });
    expect(await attempt(failing.url, { timeoutMs: 300 })).toEqual({
      delivered: false,
      statusCode: 500,
      error: 'HTTP 500',
      responseBody: 'partial',
      durationMs: expect.any(Number),
    });
  });

  it('keeps a binary body within 4096 bytes once read as text', async () => {
    const binary = Buffer.alloc(8192, 0xff);
    const receiver = await listen((_request, response) => {
      response.writeHead(500);
      response.end(binary);
    });
    const outcome = await attempt(receiver.url, { timeoutMs: 2000 });
    expect(outcome.statusCode).toBe(500);
    expect(Buffer.byteLength(outcome.responseBody!)).toBeLessThanOrEqual(4096);
    expect(outcome.responseBody!.length).toBeGreaterThan(1000);
  });

  it('keeps only the first 4096 bytes of a huge body and stops reading it', async () => {
    const megabyte = Buffer.alloc(1024 * 1024, 'a');
    megabyte.write('start', 0);
    // The body never ends: an attempt that waited for its end would time out.
    const receiver = await listen((_request, response) => {
      response.writeHead(200);
      response.write(megabyte);
    });
    const outcome = await attempt(receiver.url, { timeoutMs: 2000 });
    expect(outcome).toEqual({ delivered: true, statusCode: 200, responseBody: megabyte.subarray(0, 4096).toString(), durationMs: expect.any(Number) });
  });

  it('reports a refused connection', async () => {
    const closed = await listen();
    await closers.pop()!();
    expect(await attempt(closed.url)).toEqual({ delivered: false, error: 'connection refused (ECONNREFUSED)', durationMs: expect.any(Number) });
  });

  it('reports a receiver that does not speak TLS on an https URL', async () => {
    const receiver = await listen();
    const outcome = await attempt(`https://receiver.test:${receiver.port}/hook`, { resolve: resolvingTo('127.0.0.1') });
    expect(outcome).toEqual({ delivered: false, error: 'TLS: wrong version number (EPROTO)', durationMs: expect.any(Number) });
  });

  it('reuses one kept-alive connection for attempts in a row', async () => {
    const receiver = await listen(answering(200, {}, 'ok'));
    expect(await attempt(receiver.url)).toMatchObject({ delivered: true });
    expect(await attempt(receiver.url)).toMatchObject({ delivered: true });
    expect(receiver.received).toHaveLength(2);
    expect(receiver.connections()).toBe(1);
  });

  it('delivers to a host name through the vetted address of its resolver', async () => {
    const receiver = await listen(answering(200));
    const outcome = await attempt(`http://receiver.test:${receiver.port}/hook`, { resolve: resolvingTo('127.0.0.1') });
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200 });
    expect(receiver.received[0]!.headers.host).toBe(`receiver.test:${receiver.port}`);
    expect(lookupAnswers).toEqual(['receiver.test → 127.0.0.1']);
  });

  it('reports a host name that does not resolve', async () => {
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND receiver.test'), { code: 'ENOTFOUND' });
    const outcome = await attempt('http://receiver.test/hook', { resolve: () => Promise.reject(notFound) });
    expect(outcome).toEqual({ delivered: false, error: 'DNS lookup failed (ENOTFOUND)', durationMs: expect.any(Number) });
  });

  it('fails an unsupported or invalid URL without a socket', async () => {
    expect(await attempt('ftp://receiver.test/hook')).toMatchObject({ delivered: false, error: 'unsupported protocol ftp:' });
    expect(await attempt('not a url')).toMatchObject({ delivered: false, error: 'invalid URL' });
    expect(connectSpy).not.toHaveBeenCalled();
  });

  it('never puts header values in an error', async () => {
    const outcome = await attempt('http://127.0.0.1:1/hook', { headers: { 'x-signature': 'secret\nvalue' } });
    expect(outcome).toMatchObject({ delivered: false, error: 'request failed (ERR_INVALID_CHAR)' });
    expect(connectSpy).not.toHaveBeenCalled();
  });
});

describe('sendAttempt to a refused target', () => {
  // Each refusal happens in the guarded lookup: the lookup never answers, so nothing connects.
  it.each([
    ['10.0.0.1', 'private address 10.0.0.1'],
    ['172.16.0.1', 'private address 172.16.0.1'],
    ['192.168.0.1', 'private address 192.168.0.1'],
    ['127.0.0.1', 'loopback address 127.0.0.1'],
    ['169.254.169.254', 'link-local address 169.254.169.254'],
    ['100.64.0.1', 'carrier-grade NAT address 100.64.0.1'],
    ['239.1.2.3', 'multicast address 239.1.2.3'],
    ['255.255.255.255', 'broadcast address 255.255.255.255'],
    ['0.0.0.0', 'unspecified address 0.0.0.0'],
    ['198.18.0.1', 'reserved address 198.18.0.1'],
    ['fd12:3456::1', 'unique local address fd12:3456::1'],
    ['fe80::1', 'link-local address fe80::1'],
    ['::1', 'loopback address ::1'],
    ['::ffff:10.0.0.1', 'private address 10.0.0.1 (in ::ffff:10.0.0.1)'],
    ['::ffff:127.0.0.1', 'loopback address 127.0.0.1 (in ::ffff:127.0.0.1)'],
    ['64:ff9b::a00:1', 'private address 10.0.0.1 (in 64:ff9b::a00:1)'],
    ['2002:0a00:0001::', 'private address 10.0.0.1 (in 2002:0a00:0001::)'],
  ])('refuses a host resolving to %s (%s) before connecting', async (address, reason) => {
    const outcome = await attempt('http://receiver.test/hook', { resolve: resolvingTo(address), loopback: undefined });
    expect(outcome).toEqual({ delivered: false, error: `target refused: ${reason}`, durationMs: expect.any(Number) });
    expect(lookupAnswers).toEqual([]);
  });

  it('refuses a host resolving to a public and a private address', async () => {
    const outcome = await attempt('https://receiver.test/hook', { resolve: resolvingTo('93.184.216.34', '10.0.0.1'), loopback: undefined });
    expect(outcome).toMatchObject({ delivered: false, error: 'target refused: private address 10.0.0.1' });
    expect(lookupAnswers).toEqual([]);
  });

  it.each([
    ['http://127.0.0.1:4000/hook', 'loopback address 127.0.0.1'],
    ['http://0x7f.1/hook', 'loopback address 127.0.0.1'],
    ['http://2130706433/hook', 'loopback address 127.0.0.1'],
    ['https://[::1]/hook', 'loopback address ::1'],
    ['http://[::ffff:127.0.0.1]/hook', 'loopback address 127.0.0.1 (in ::ffff:7f00:1)'],
    ['http://10.0.0.1/hook', 'private address 10.0.0.1'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local address 169.254.169.254'],
    ['https://[fd00::1]:8443/hook', 'unique local address fd00::1'],
  ])('refuses the IP literal URL %s before opening a socket', async (url, reason) => {
    expect(await attempt(url, { loopback: undefined })).toEqual({ delivered: false, error: `target refused: ${reason}`, durationMs: expect.any(Number) });
    expect(connectSpy).not.toHaveBeenCalled();
  });

  it("refuses a receiver on one of the service's own loopback ports, by literal, as localhost or by a name resolving to it, and never connects to it", async () => {
    const own = await listen();
    const loopback = { servicePorts: [own.port] };
    const reason = `loopback address 127.0.0.1 port ${own.port}, one of the service's own ports`;
    expect(await attempt(own.url, { loopback })).toMatchObject({ delivered: false, error: `target refused: ${reason}` });
    // localhost is refused before any lookup, as at create; another name when it resolves to loopback.
    expect(await attempt(`http://localhost:${own.port}/hook`, { loopback, resolve: resolvingTo('127.0.0.1') })).toMatchObject({
      delivered: false,
      error: `target refused: localhost port ${own.port}, one of the service's own ports`,
    });
    expect(await attempt(`http://receiver.test:${own.port}/hook`, { loopback, resolve: resolvingTo('127.0.0.1') })).toMatchObject({
      delivered: false,
      error: `target refused: ${reason}`,
    });
    expect(own.connections()).toBe(0);
  });

  it('refuses a loopback receiver on a port outside the allowed ones, and delivers to one inside', async () => {
    const listed = await listen();
    const unlisted = await listen();
    const loopback = { servicePorts: [], allowedPorts: [listed.port] };
    expect(await attempt(unlisted.url, { loopback })).toMatchObject({
      delivered: false,
      error: `target refused: loopback address 127.0.0.1 port ${unlisted.port}, not one of the loopback ports allowed (${listed.port})`,
    });
    expect(await attempt(listed.url, { loopback })).toMatchObject({ delivered: true, statusCode: 200 });
    expect(unlisted.connections()).toBe(0);
  });
});

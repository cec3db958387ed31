import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LoopbackTargets } from '../../../lib/config/runtime';
import { guardedLookup, refusedAddressReason, refusedLiteralTargetReason, resolveTarget, type Resolver } from '../../../lib/deliveries/target-guard';

// Nothing here opens a socket: addresses come from literals and injected resolvers.

const resolvingTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

/** Calls a lookup function the way net.connect does, as a promise of its callback's arguments. */
function lookUp(resolve: Resolver, options: LookupOptions, loopback?: LoopbackTargets, port = 443) {
  return new Promise<{ address: string | LookupAddress[]; family?: number }>((settle, reject) =>
    guardedLookup({ port, loopback, resolve })('receiver.test', options, (error, address, family) => (error ? reject(error) : settle({ address, family }))),
  );
}

describe('refusedAddressReason', () => {
  it.each([
    ['10.1.2.3', 'private address 10.1.2.3'],
    ['172.16.5.4', 'private address 172.16.5.4'],
    ['192.168.1.1', 'private address 192.168.1.1'],
    ['127.0.0.1', 'loopback address 127.0.0.1'],
    ['127.9.9.9', 'loopback address 127.9.9.9'],
    ['169.254.169.254', 'link-local address 169.254.169.254'],
    ['100.64.0.1', 'carrier-grade NAT address 100.64.0.1'],
    ['224.0.0.1', 'multicast address 224.0.0.1'],
    ['255.255.255.255', 'broadcast address 255.255.255.255'],
    ['0.0.0.0', 'unspecified address 0.0.0.0'],
    ['0.1.2.3', 'unspecified address 0.1.2.3'],
    ['198.18.0.1', 'reserved address 198.18.0.1'],
    ['192.0.2.1', 'reserved address 192.0.2.1'],
    ['240.0.0.1', 'reserved address 240.0.0.1'],
    ['::1', 'loopback address ::1'],
    ['::', 'unspecified address ::'],
    ['fd00::1', 'unique local address fd00::1'],
    ['fe80::1', 'link-local address fe80::1'],
    ['fec0::1', 'site-local address fec0::1'],
    ['ff02::1', 'multicast address ff02::1'],
    ['2001:db8::1', 'reserved address 2001:db8::1'],
    ['2001::1', 'Teredo address 2001::1'],
    ['::a00:1', 'non-global address ::a00:1'],
    ['::ffff:10.0.0.1', 'private address 10.0.0.1 (in ::ffff:10.0.0.1)'],
    ['::ffff:127.0.0.1', 'loopback address 127.0.0.1 (in ::ffff:127.0.0.1)'],
    ['::ffff:169.254.169.254', 'link-local address 169.254.169.254 (in ::ffff:169.254.169.254)'],
    ['64:ff9b::a00:1', 'private address 10.0.0.1 (in 64:ff9b::a00:1)'],
    ['2002:0a00:0001::', 'private address 10.0.0.1 (in 2002:0a00:0001::)'],
    ['receiver.test', 'unparseable address receiver.test'],
  ])('refuses %s: %s', (ip, reason) => {
    expect(refusedAddressReason(ip, 443)).toBe(reason);
  });

  it.each(['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'accepts the public address %s',
    (ip) => {
      expect(refusedAddressReason(ip, 443)).toBeUndefined();
    },
  );

  const anyLoopbackPort: LoopbackTargets = { servicePorts: [] };

  it.each(['127.0.0.1', '127.5.6.7', '::1', '::ffff:127.0.0.1'])('accepts the loopback address %s when loopback is allowed', (ip) => {
    expect(refusedAddressReason(ip, 4000, anyLoopbackPort)).toBeUndefined();
  });

  it('still refuses private addresses, and loopback behind a NAT64 prefix, when loopback is allowed', () => {
    expect(refusedAddressReason('10.0.0.1', 4000, anyLoopbackPort)).toBe('private address 10.0.0.1');
    expect(refusedAddressReason('64:ff9b::7f00:1', 4000, anyLoopbackPort)).toBe('loopback address 127.0.0.1 (in 64:ff9b::7f00:1)');
  });

  it.each(['127.0.0.1', '127.5.6.7', '::1'])("refuses the service's own ports on %s, whatever else is allowed", (ip) => {
    const own: LoopbackTargets = { servicePorts: [3000, 8000, 8545], allowedPorts: [4000, 8000] };
    expect(refusedAddressReason(ip, 8000, own)).toBe(`loopback address ${ip} port 8000, one of the service's own ports`);
    expect(refusedAddressReason(ip, 8545, own)).toBe(`loopback address ${ip} port 8545, one of the service's own ports`);
    expect(refusedAddressReason(ip, 4000, own)).toBeUndefined();
  });

  it("refuses the service's own port behind an IPv4-mapped address", () => {
    expect(refusedAddressReason('::ffff:127.0.0.1', 8000, { servicePorts: [8000] })).toBe(
      "loopback address 127.0.0.1 port 8000, one of the service's own ports (in ::ffff:127.0.0.1)",
    );
  });

  it('refuses loopback ports outside the allowed list, naming the ports allowed', () => {
    const narrowed: LoopbackTargets = { servicePorts: [], allowedPorts: [4000, 4001] };
    expect(refusedAddressReason('127.0.0.1', 4001, narrowed)).toBeUndefined();
    expect(refusedAddressReason('127.0.0.1', 4002, narrowed)).toBe('loopback address 127.0.0.1 port 4002, not one of the loopback ports allowed (4000, 4001)');
    expect(refusedAddressReason('93.184.216.34', 4002, narrowed)).toBeUndefined();
  });
});

describe('refusedLiteralTargetReason', () => {
  const local: LoopbackTargets = { servicePorts: [3000, 8000] };

  it.each<[string, LoopbackTargets | undefined, string]>([
    ['http://169.254.169.254/latest/meta-data/', local, 'link-local address 169.254.169.254'],
    ['https://10.0.0.1/hook', local, 'private address 10.0.0.1'],
    ['https://[fd00::1]:8443/hook', local, 'unique local address fd00::1'],
    ['http://127.0.0.1:8000/', local, "loopback address 127.0.0.1 port 8000, one of the service's own ports"],
    ['http://0x7f.1:3000/', local, "loopback address 127.0.0.1 port 3000, one of the service's own ports"],
    ['https://127.0.0.1/hook', undefined, 'loopback address 127.0.0.1'],
    ['https://[::1]:4000/hook', undefined, 'loopback address ::1'],
    // localhost is loopback by definition (RFC 6761): its port is vetted like a literal's.
    ['http://localhost:8000/', local, "localhost port 8000, one of the service's own ports"],
    ['https://localhost:3000/hook', local, "localhost port 3000, one of the service's own ports"],
    ['http://localhost:5000/', { servicePorts: [], allowedPorts: [4000] }, 'localhost port 5000, not one of the loopback ports allowed (4000)'],
  ])('refuses %s', (url, loopback, reason) => {
    expect(refusedLiteralTargetReason(new URL(url), loopback)).toBe(reason);
  });

  it("takes the scheme's default port when the URL has none", () => {
    expect(refusedLiteralTargetReason(new URL('http://127.0.0.1/hook'), { servicePorts: [80] })).toMatch(/port 80,/);
    expect(refusedLiteralTargetReason(new URL('https://127.0.0.1/hook'), { servicePorts: [443] })).toMatch(/port 443,/);
    expect(refusedLiteralTargetReason(new URL('https://127.0.0.1/hook'), { servicePorts: [80] })).toBeUndefined();
  });

  it('leaves host names to be vetted when they are resolved, and accepts public literals and allowed loopback ports', () => {
    expect(refusedLiteralTargetReason(new URL('http://localhost:4000/'), local)).toBeUndefined();
    // Where no loopback port is allowed (prod), localhost is a name like any other, refused once resolved.
    expect(refusedLiteralTargetReason(new URL('https://localhost:8000/'), undefined)).toBeUndefined();
    expect(refusedLiteralTargetReason(new URL('https://receiver.example.com/'), undefined)).toBeUndefined();
    expect(refusedLiteralTargetReason(new URL('https://93.184.216.34/hook'), undefined)).toBeUndefined();
    expect(refusedLiteralTargetReason(new URL('http://127.0.0.1:4000/hook'), local)).toBeUndefined();
  });
});

describe('guardedLookup', () => {
  it('answers every vetted address when asked for all (autoSelectFamily)', async () => {
    await expect(lookUp(resolvingTo('93.184.216.34', '2606:2800:220:1::1'), { all: true })).resolves.toEqual({
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
      family: undefined,
    });
  });

  it('answers the first vetted address, and its family, when asked for one', async () => {
    await expect(lookUp(resolvingTo('93.184.216.34', '2606:2800:220:1::1'), {})).resolves.toEqual({ address: '93.184.216.34', family: 4 });
  });

  it('answers only addresses of the family asked for', async () => {
    await expect(lookUp(resolvingTo('93.184.216.34', '2606:2800:220:1::1'), { family: 6 })).resolves.toEqual({ address: '2606:2800:220:1::1', family: 6 });
    await expect(lookUp(resolvingTo('93.184.216.34'), { family: 6 })).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('refuses a host when any of its addresses is refused, naming the host and the reason', async () => {
    await expect(lookUp(resolvingTo('93.184.216.34', '10.0.0.1'), { all: true })).rejects.toMatchObject({
      code: 'ERR_TARGET_REFUSED',
      message: 'refused to connect to receiver.test: private address 10.0.0.1',
    });
    await expect(lookUp(resolvingTo('2606:2800:220:1::1', 'fd00::1'), {})).rejects.toMatchObject({ code: 'ERR_TARGET_REFUSED' });
  });

  it('refuses loopback unless it is allowed', async () => {
    await expect(lookUp(resolvingTo('127.0.0.1'), {})).rejects.toMatchObject({ code: 'ERR_TARGET_REFUSED', reason: 'loopback address 127.0.0.1' });
    await expect(lookUp(resolvingTo('127.0.0.1'), {}, { servicePorts: [] })).resolves.toEqual({ address: '127.0.0.1', family: 4 });
  });

  it("refuses a name resolving to loopback on one of the service's own ports", async () => {
    await expect(lookUp(resolvingTo('127.0.0.1'), {}, { servicePorts: [8000] }, 8000)).rejects.toMatchObject({
      code: 'ERR_TARGET_REFUSED',
      reason: "loopback address 127.0.0.1 port 8000, one of the service's own ports",
    });
    await expect(lookUp(resolvingTo('127.0.0.1'), {}, { servicePorts: [8000] }, 4000)).resolves.toEqual({ address: '127.0.0.1', family: 4 });
  });

  it('passes a resolver failure on, and fails a host without addresses', async () => {
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND receiver.test'), { code: 'ENOTFOUND' });
    await expect(lookUp(() => Promise.reject(notFound), {})).rejects.toBe(notFound);
    await expect(lookUp(resolvingTo(), { all: true })).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('resolveTarget', () => {
  const answers = (addresses: string[]): Resolver => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it('keys a host by its lowest address, and hands the attempt exactly the addresses resolved', async () => {
    const target = await resolveTarget('https://receiver.example.com/hook', answers(['203.0.113.9', '198.51.100.7']));
    expect(target.address).toBe('198.51.100.7');
    expect(await target.resolve!('receiver.example.com')).toEqual([
      { address: '203.0.113.9', family: 4 },
      { address: '198.51.100.7', family: 4 },
    ]);
  });

  it('keys an IPv6 address by its /64, which one machine may hold whole', async () => {
    const first = await resolveTarget('https://a.example.com/', answers(['2001:db8:1:2::10']));
    const second = await resolveTarget('https://[2001:db8:1:2:ffff::1]:8443/');
    expect(first.address).toBe('2001:db8:1:2::/64');
    expect(second).toEqual({ address: '2001:db8:1:2::/64' });
  });

  it('keys a literal by itself (no lookup), and a host that does not resolve in time by its name', async () => {
    expect(await resolveTarget('http://127.0.0.1:4000/')).toEqual({ address: '127.0.0.1' });
    const never: Resolver = () => new Promise(() => undefined);
    expect(await resolveTarget('https://slow.example.com/', never, 50)).toEqual({ address: 'slow.example.com' });
    const failing: Resolver = async () => Promise.reject(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }));
    expect(await resolveTarget('https://gone.example.com/', failing)).toEqual({ address: 'gone.example.com' });
  });
});

import type { LookupAddress, LookupOptions } from 'node:dns';
import { guardedLookup, refusedAddressReason, type Resolver } from '../../../lib/deliveries/target-guard';

// Nothing here opens a socket: addresses come from literals and injected resolvers.

const resolvingTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

/** Calls a lookup function the way net.connect does, as a promise of its callback's arguments. */
function lookUp(resolve: Resolver, options: LookupOptions, allowLoopback = false) {
  return new Promise<{ address: string | LookupAddress[]; family?: number }>((settle, reject) =>
    guardedLookup({ allowLoopback, resolve })('receiver.test', options, (error, address, family) => (error ? reject(error) : settle({ address, family }))),
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
    expect(refusedAddressReason(ip, { allowLoopback: false })).toBe(reason);
  });

  it.each(['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'accepts the public address %s',
    (ip) => {
      expect(refusedAddressReason(ip, { allowLoopback: false })).toBeUndefined();
    },
  );

  it.each(['127.0.0.1', '127.5.6.7', '::1', '::ffff:127.0.0.1'])('accepts the loopback address %s when loopback is allowed', (ip) => {
    expect(refusedAddressReason(ip, { allowLoopback: true })).toBeUndefined();
  });

  it('still refuses private addresses, and loopback behind a NAT64 prefix, when loopback is allowed', () => {
    expect(refusedAddressReason('10.0.0.1', { allowLoopback: true })).toBe('private address 10.0.0.1');
    expect(refusedAddressReason('64:ff9b::7f00:1', { allowLoopback: true })).toBe('loopback address 127.0.0.1 (in 64:ff9b::7f00:1)');
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
    await expect(lookUp(resolvingTo('127.0.0.1'), {}, true)).resolves.toEqual({ address: '127.0.0.1', family: 4 });
  });

  it('passes a resolver failure on, and fails a host without addresses', async () => {
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND receiver.test'), { code: 'ENOTFOUND' });
    await expect(lookUp(() => Promise.reject(notFound), {})).rejects.toBe(notFound);
    await expect(lookUp(resolvingTo(), { all: true })).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});

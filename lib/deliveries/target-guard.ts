import { promises as dns } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { LoopbackTargets } from '../config/runtime';

/** Resolves a host name to every address it has (the guard vets all of them). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

/** Names for ipaddr.js ranges in refusal reasons; other ranges go by their ipaddr.js name. */
const RANGE_LABELS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
  uniqueLocal: 'unique local',
  deprecatedSiteLocal: 'site-local',
  rfc6145: 'IPv4-translated',
  rfc6052: 'local-use NAT64',
  teredo: 'Teredo',
  benchmarking: 'benchmarking',
  unicast: 'non-global',
};

const GLOBAL_UNICAST_V6 = ipaddr.parse('2000::');
const NAT64_V6 = ipaddr.parse('64:ff9b::');
const SIX_TO_FOUR_V6 = ipaddr.parse('2002::');

/**
 * Why a receiver may not be reached at `ip` on `port`, or undefined when it is a public unicast
 * address, or a loopback one that `loopback` allows. Webhook URLs are chosen by customers, so without
 * this they could make us call our own network (the instance metadata service, internal APIs, the
 * service's own store).
 */
export function refusedAddressReason(ip: string, port: number, loopback?: LoopbackTargets): string | undefined {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(ip);
  } catch {
    return `unparseable address ${ip}`;
  }
  const embedded = embeddedIPv4(address);
  if (embedded) {
    // Only a mapped address reaches this host's own loopback; through a translator it is not ours.
    const reason = refusedAddressReason(embedded.address.toString(), port, embedded.mapped ? loopback : undefined);
    return reason && `${reason} (in ${ip})`;
  }
  const range: string = address.range();
  if (range === 'unicast' && (address.kind() === 'ipv4' || address.match(GLOBAL_UNICAST_V6, 3))) return undefined;
  if (range === 'loopback' && loopback) return refusedLoopbackPortReason(`loopback address ${ip}`, port, loopback);
  return `${RANGE_LABELS[range] ?? range} address ${ip}`;
}

/** Why a loopback `target` (an address, or localhost) may not be reached on `port`, when it may not. */
function refusedLoopbackPortReason(target: string, port: number, { servicePorts, allowedPorts }: LoopbackTargets): string | undefined {
  if (servicePorts.includes(port)) return `${target} port ${port}, one of the service's own ports`;
  if (allowedPorts && !allowedPorts.includes(port)) {
    return `${target} port ${port}, not one of the loopback ports allowed (${allowedPorts.join(', ')})`;
  }
  return undefined;
}

/** The port a request to `url` connects to. */
export function targetPort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * Why `url` can never be a target, when its host is an IP literal (new URL() has already normalized
 * odd forms: 0x7f.1, 2130706433), or `localhost` on a loopback port that is never allowed (the name
 * is loopback by definition, RFC 6761); undefined for an allowed one and for any other name, which
 * is vetted each time it is resolved.
 */
export function refusedLiteralTargetReason(url: URL, loopback?: LoopbackTargets): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) return refusedAddressReason(host, targetPort(url), loopback);
  return host === 'localhost' && loopback ? refusedLoopbackPortReason('localhost', targetPort(url), loopback) : undefined;
}

/** The IPv4 address an IPv6 address stands for: IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4. */
function embeddedIPv4(address: ipaddr.IPv4 | ipaddr.IPv6): { address: ipaddr.IPv4 | ipaddr.IPv6; mapped: boolean } | undefined {
  if (address.kind() === 'ipv4') return undefined;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return { address: v6.toIPv4Address(), mapped: true };
  const bytes = v6.toByteArray();
  if (v6.match(NAT64_V6, 96)) return { address: ipaddr.fromByteArray(bytes.slice(12)), mapped: false };
  if (v6.match(SIX_TO_FOUR_V6, 16)) return { address: ipaddr.fromByteArray(bytes.slice(2, 6)), mapped: false };
  return undefined;
}

/** A refused target: no socket was connected. */
export class TargetRefusedError extends Error {
  readonly code = 'ERR_TARGET_REFUSED';
  constructor(
    host: string,
    readonly reason: string,
  ) {
    super(`refused to connect to ${host}: ${reason}`);
    this.name = 'TargetRefusedError';
  }
}

const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/**
 * A `lookup` for http.request / net.connect that resolves the host, refuses it when any of its
 * addresses is refused, and otherwise hands exactly the vetted addresses to the socket, so that a
 * second DNS answer (rebinding) cannot slip in between the check and the connect.
 * Hosts that are IP literals never reach a lookup: callers vet those with refusedLiteralTargetReason.
 */
export function guardedLookup(options: { port: number; loopback?: LoopbackTargets; resolve?: Resolver }): LookupFunction {
  const resolve = options.resolve ?? systemResolver;
  return (hostname, lookupOptions, callback) => {
    vettedAddresses(hostname, options.port, options.loopback, resolve).then(
      (addresses) => {
        const family = lookupOptions.family === 'IPv4' ? 4 : lookupOptions.family === 'IPv6' ? 6 : lookupOptions.family;
        const usable = family === 4 || family === 6 ? addresses.filter((address) => address.family === family) : addresses;
        const first = usable[0];
        if (!first) return callback(Object.assign(new Error(`no IPv${family} address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        // Node asks for every address ({ all: true }) when it races IPv4 and IPv6 (autoSelectFamily).
        if (lookupOptions.all) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

async function vettedAddresses(hostname: string, port: number, loopback: LoopbackTargets | undefined, resolve: Resolver) {
  const addresses = await resolve(hostname);
  if (addresses.length === 0) throw Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' });
  for (const { address } of addresses) {
    const reason = refusedAddressReason(address, port, loopback);
    if (reason) throw new TargetRefusedError(hostname, reason);
  }
  return addresses;
}

/** The target's host as resolved once before an attempt: the address that keys its host slot, and a resolver handing the attempt exactly those addresses. */
export interface ResolvedTarget {
  address: string;
  resolve?: Resolver;
}

/** How long the lookup before an attempt may take; the attempt's own lookup, within its timeout, is the one that fails. */
const TARGET_LOOKUP_TIMEOUT_MS = 5_000;

/**
 * Resolves the URL's host once. Its lowest address keys the attempt's host slot (an IPv6 one by its
 * /64, which one machine may hold whole), so that ports, names and round-robin answers pointing at
 * one machine share it; the attempt connects to exactly the addresses resolved, vetted by
 * guardedLookup as ever. A host that does not resolve in time is keyed by its name, and its attempt
 * looks it up (and fails) within its own timeout.
 */
export async function resolveTarget(url: string, resolve: Resolver = systemResolver, timeoutMs = TARGET_LOOKUP_TIMEOUT_MS): Promise<ResolvedTarget> {
  let hostname: string;
  try {
    hostname = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return { address: url };
  }
  if (ipaddr.isValid(hostname)) return { address: slotAddress(hostname) };
  let timer: NodeJS.Timeout | undefined;
  try {
    const addresses = await Promise.race([resolve(hostname), new Promise<never>((_, reject) => (timer = setTimeout(reject, timeoutMs)))]);
    if (addresses.length === 0) return { address: hostname };
    return { address: addresses.map(({ address }) => slotAddress(address)).sort()[0]!, resolve: async () => addresses };
  } catch {
    return { address: hostname };
  } finally {
    clearTimeout(timer);
  }
}

function slotAddress(ip: string): string {
  const parsed = ipaddr.process(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}

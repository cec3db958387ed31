import { createServer } from 'node:net';
import ipaddr from 'ipaddr.js';
import { targetPort } from '../../lib/deliveries/target-guard';

/**
 * The ports of the service's own parts on this machine, which no webhook may target (the
 * configuration's `loopbackTargets.servicePorts`). The gateway's processes share one port;
 * `endpoints` are the store's and the chains' URLs, of which those on loopback count.
 */
export function servicePorts(ports: (number | undefined)[], endpoints: (string | undefined)[]): number[] {
  const loopbackPorts = endpoints.map((endpoint) => (endpoint ? loopbackPortOf(endpoint) : undefined));
  return [...new Set([...ports, ...loopbackPorts].filter((port) => port !== undefined))];
}

function loopbackPortOf(endpoint: string): number | undefined {
  const url = new URL(endpoint);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const loopback = host === 'localhost' || (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback');
  return loopback ? targetPort(url) : undefined;
}

/**
 * A port that was free on `host` a moment ago: for PORT=0, the gateway's port is chosen before it
 * listens, since every process's configuration holds it (servicePorts).
 */
export function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

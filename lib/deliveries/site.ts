import { getDomain } from 'tldts';

/**
 * The site a webhook URL reaches: its registrable domain (eTLD+1 by the Public Suffix List, its
 * private section included, so that `a.github.io` and `b.github.io` are two sites while
 * `a.example.com` and `b.example.com` are one), or its host when it has none (an IP address,
 * `localhost`). Subdomains therefore never multiply a receiver's share of an account's attempts.
 */
export function siteOf(url: string): string {
  const { hostname } = new URL(url);
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return getDomain(host, { allowPrivateDomains: true }) ?? host;
}

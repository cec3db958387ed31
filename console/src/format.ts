import { escapeHidden } from '../../lib/text';
import type { Webhook } from './api/client';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const hourFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
const integer = new Intl.NumberFormat();

/** Milliseconds since the epoch, in the browser's time zone. */
export const formatTime = (ms: number | undefined) => (ms === undefined ? '—' : dateTime.format(new Date(ms)));
export const formatHour = (ms: number) => hourFormat.format(new Date(ms));
export const formatCount = (value: number) => integer.format(value);
/** A count with its noun agreeing: "1 address", "25,000 addresses". */
export const formatCounted = (value: number, one: string, many: string) => `${formatCount(value)} ${value === 1 ? one : many}`;
/** A refresh interval as a page states it: "every 15 s". */
export const formatInterval = (ms: number) => `${formatCount(ms / 1000)} s`;
export const formatDuration = (ms: number | undefined) => (ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`);

/** How long ago, in words a person reads at a glance ("3 min ago"). */
export function formatAgo(ms: number | undefined, now = Date.now()): string {
  if (ms === undefined) return 'never';
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 0) return `in ${formatAgo(now, ms).replace(' ago', '')}`;
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}

/** A JSON text pretty-printed, or as it is when it is not JSON. Shown as text, never as HTML. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * A name someone chose, with what hides in it or turns it around escaped (`npm start\u200b`): the API
 * refuses such names now, but ones stored before it did are shown as they are.
 */
export const shownName = (name: string) => escapeHidden(name);
export const shownDescription = (description: string) => escapeHidden(description, 'description');

/** What a webhook is called where it is listed: its name, or its id when it has none. */
export const webhookTitle = (webhook: Pick<Webhook, 'id' | 'name'>) => shownName(webhook.name) || webhook.id;

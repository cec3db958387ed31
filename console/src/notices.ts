/**
 * A notice for the page navigated to, carried in the history entry's state rather than the URL (it may
 * hold a webhook's name, the user's text) or a module's variable: shown once, then taken out, so that a
 * reload or a later Back does not show it again.
 */
interface NoticeState {
  notice: string;
}

/** Goes to `url` (in the console) with `notice` for its page to show. */
export function routeWithNotice(url: string, notice: string) {
  const state: NoticeState = { notice };
  history.pushState(state, '', url);
  // preact-iso's router follows popstate: it renders the new address and leaves the state alone.
  dispatchEvent(new PopStateEvent('popstate', { state }));
}

/** The notice this history entry was opened with, if any, removed from it. */
export function takeNotice(): string | undefined {
  const { notice } = (history.state ?? {}) as Partial<NoticeState>;
  if (typeof notice !== 'string') return undefined;
  history.replaceState(null, '');
  return notice;
}

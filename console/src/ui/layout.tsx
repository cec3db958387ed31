import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { paths } from '../paths';
import { session } from '../session';

const SECTIONS = [
  // preact-iso's path has no trailing slash: the overview at /console/ is '/console'.
  { href: paths.overview, label: 'Overview', matches: (path: string) => path.replace(/\/+$/, '') === paths.overview.replace(/\/+$/, '') },
  { href: paths.webhooks, label: 'Webhooks', matches: (path: string) => path.startsWith(paths.webhooks) },
  { href: paths.secret, label: 'Shared secret', matches: (path: string) => path.startsWith(paths.secret) },
  { href: paths.apiKeys, label: 'API keys', matches: (path: string) => path.startsWith(paths.apiKeys) },
];

export function Layout({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="site-header">
        <a class="brand" href={paths.overview}>
          Webhooks console
        </a>
        <nav aria-label="Sections">
          <ul>
            {SECTIONS.map(({ href, label, matches }) => (
              <li key={href}>
                <a href={href} aria-current={matches(path) ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="sign-out" onClick={() => session.signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

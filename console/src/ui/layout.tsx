import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { session } from '../session';

const SECTIONS = [
  // preact-iso's path has no trailing slash: the overview at /console/ is '/console'.
  { href: '/console/', label: 'Overview', matches: (path: string) => path.replace(/\/+$/, '') === '/console' },
  { href: '/console/webhooks', label: 'Webhooks', matches: (path: string) => path.startsWith('/console/webhooks') },
  { href: '/console/secret', label: 'Shared secret', matches: (path: string) => path.startsWith('/console/secret') },
  { href: '/console/api-keys', label: 'API keys', matches: (path: string) => path.startsWith('/console/api-keys') },
];

export function Layout({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="site-header">
        <a class="brand" href="/console/">
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

import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useMe } from '../me.js';

export const BASE = '/dashboard';

const LINKS: Array<[string, string]> = [
  ['Overview', `${BASE}/`],
  ['Customers', `${BASE}/customers`],
  ['Rewards', `${BASE}/rewards`],
  ['Tiers', `${BASE}/tiers`],
  ['Event types', `${BASE}/event-types`],
  ['Webhooks', `${BASE}/webhooks`],
  ['API keys', `${BASE}/keys`],
  ['Settings', `${BASE}/settings`],
];

/** The frame of every signed-in page: who is signed in, the one navigation landmark, sign-out. */
export function Layout({ children, onSignOut }: { children: ComponentChildren; onSignOut: () => void }) {
  const { me, readOnly } = useMe();
  const { path } = useLocation();
  const current = (href: string) => (href === `${BASE}/` ? path === href || path === BASE : path === href || path.startsWith(`${href}/`));
  return (
    <div class="shell">
      <header class="topbar">
        <span class="brand">Loyalty</span>
        <span class="business" title={me.business.id}>
          {me.business.name}
        </span>
        <span class={`badge ${readOnly ? 'badge-public' : 'badge-private'}`} title={`Signed in with ${me.key_hint}`}>
          {readOnly ? 'Public key · read-only' : 'Private key'}
        </span>
        <button type="button" class="ghost" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav class="sidebar" aria-label="Main">
        <ul>
          {LINKS.map(([label, href]) => (
            <li key={href}>
              <a href={href} aria-current={current(href) ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main class="content">{children}</main>
    </div>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1>{title}</h1>
      {children}
    </div>
  );
}

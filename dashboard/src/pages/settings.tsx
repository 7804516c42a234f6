import { api, ApiError } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { LoadError, Loading, Time } from '../components/ui.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';

/**
 * The business and the signed-in key (GET /me), and the program settings of CONTRACT.md §13 when
 * this server offers them (GET /program); a server without them answers 404 and the page says so.
 */
export function SettingsPage() {
  const { me } = useMe();
  const program = useLoad(
    () =>
      api.get<Record<string, unknown>>('/program').catch((e) => {
        if (e instanceof ApiError && e.status === 404) return null;
        throw e;
      }),
    [],
  );
  return (
    <>
      <PageHeader title="Settings" />
      <section class="card">
        <h2>Business</h2>
        <dl class="profile">
          <dt>Name</dt>
          <dd>{me.business.name}</dd>
          <dt>Business id</dt>
          <dd class="mono">{me.business.id}</dd>
          <dt>Plan</dt>
          <dd>{me.business.plan === 'free' ? 'Free (up to 1,000 customers)' : 'Unlimited'}</dd>
          <dt>Since</dt>
          <dd>
            <Time iso={me.business.created_at} />
          </dd>
        </dl>
      </section>
      <section class="card">
        <h2>This key</h2>
        <dl class="profile">
          <dt>Key</dt>
          <dd class="mono">
            {me.key_hint} ({me.type}){me.name ? ` — ${me.name}` : ''}
          </dd>
          <dt>Permissions</dt>
          <dd>{me.permissions.join(', ')}</dd>
        </dl>
      </section>
      <section class="card">
        <h2>Points program</h2>
        {program.error ? (
          <LoadError error={program.error} />
        ) : program.loading ? (
          <Loading />
        ) : program.data === null ? (
          <p class="muted">
            This server has no program settings yet (points expiry, pending points, rolling tiers). Points never expire and tiers are earned for life; tiers, rewards and event
            types are on their own pages.
          </p>
        ) : (
          <dl class="profile">
            {Object.entries(program.data ?? {}).map(([name, value]) => (
              <>
                <dt key={`${name}-t`}>{name.replaceAll('_', ' ')}</dt>
                <dd key={`${name}-d`} class="mono">
                  {typeof value === 'object' ? JSON.stringify(value) : String(value ?? 'none')}
                </dd>
              </>
            ))}
          </dl>
        )}
      </section>
    </>
  );
}

import { api } from '../api.js';
import { type Column, DataTable } from '../components/data-table.js';
import { PageHeader } from '../components/layout.js';
import { PointsChart } from '../components/points-chart.js';
import { Empty, LoadError, Loading, Num } from '../components/ui.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import type { Stats } from '../types.js';


const TIER_COUNT_COLUMNS: Column<Stats['tiers'][number]>[] = [
  { header: 'Tier', cell: (t) => t.name ?? <span class="muted">No tier yet</span> },
  { header: 'From', numeric: true, cell: (t) => (t.points_threshold === null ? '—' : <Num value={t.points_threshold} />) },
  { header: 'Customers', numeric: true, cell: (t) => <Num value={t.customers} /> },
];

export function OverviewPage() {
  const { readOnly } = useMe();
  const stats = useLoad(() => (readOnly ? Promise.resolve(null) : api.get<Stats>('/stats')), [readOnly]);
  return (
    <>
      <PageHeader title="Overview" />
      {readOnly ? (
        <p class="note">The overview's figures need a private key. With this public key you can look customers up, and see rewards, tiers and event types.</p>
      ) : stats.error ? (
        <LoadError error={stats.error} />
      ) : !stats.data ? (
        <Loading />
      ) : (
        <OverviewFigures stats={stats.data} />
      )}
    </>
  );
}

function OverviewFigures({ stats }: { stats: Stats }) {
  const sum = (key: 'issued' | 'redeemed' | 'expired') => stats.days.reduce((s, d) => s + d[key], 0);
  const tiered = stats.tiers.some((t) => t.tier_id !== null);
  return (
    <>
      <section class="cards" aria-label="Key figures">
        <Card label="Customers" value={stats.customers} />
        <Card label="Points outstanding" value={stats.outstanding} />
        <Card label="Issued, last 30 days" value={sum('issued')} />
        <Card label="Redeemed, last 30 days" value={sum('redeemed')} />
        <Card label="Expired, last 30 days" value={sum('expired')} />
      </section>
      <section class="card">
        {stats.days.every((d) => d.issued === 0 && d.redeemed === 0 && d.expired === 0) ? (
          <Empty title="No points moved in the last 30 days.">
            Award points to a customer from their page (under Customers), or record events from your shop, and the chart of points per day appears here.
          </Empty>
        ) : (
          <PointsChart days={stats.days} />
        )}
      </section>
      <section class="card">
        <h2>Customers per tier</h2>
        {stats.customers === 0 ? (
          <Empty title="No customers yet.">Create the first one on the customers page.</Empty>
        ) : (
          <DataTable rows={stats.tiers} columns={TIER_COUNT_COLUMNS} rowKey={(t) => t.tier_id ?? 'none'} />
        )}
        {!tiered && stats.customers > 0 && <p class="muted">No tiers defined: add them on the tiers page to reward your best customers.</p>}
      </section>
    </>
  );
}

function Card({ label, value }: { label: string; value: number }) {
  return (
    <div class="card stat">
      <span class="stat-label">{label}</span>
      <span class="stat-value">
        <Num value={value} />
      </span>
    </div>
  );
}

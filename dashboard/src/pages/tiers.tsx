import { api } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { type Column, DataTable, Listing } from '../components/data-table.js';
import { Empty, Field, FormError, Num, ReadOnlyNote } from '../components/ui.js';
import { formBody } from '../form-data.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import type { Tier } from '../types.js';

const TIER_COLUMNS: Column<Tier>[] = [
  { header: 'Tier', cell: (t) => t.name },
  { header: 'From (lifetime points)', numeric: true, cell: (t) => <Num value={t.points_threshold} /> },
  { header: 'Multiplier', numeric: true, cell: (t) => `×${t.multiplier}` },
  { header: 'Benefits', wide: true, cell: (t) => t.benefits.join(', ') || <span class="muted">—</span> },
];

export function TiersPage() {
  const { can } = useMe();
  const tiers = useLoad(() => api.page<Tier>('/tiers?limit=200'), []);
  return (
    <>
      <PageHeader title="Tiers" />
      <section class="card">
        <p class="muted">A customer holds the highest tier whose threshold their lifetime earned points reach; its multiplier applies to later earns that ask for it and to events.</p>
        <Listing loaded={tiers} empty={<Empty title="No tiers yet.">Add a tier below, for example “Silver” from 1,000 points with a 1.25 multiplier.</Empty>}>
          {(items) => <DataTable rows={items} columns={TIER_COLUMNS} rowKey={(t) => t.id} />}
        </Listing>
      </section>
      {can('rewards:write') ? <CreateTier onCreated={tiers.reload} /> : <ReadOnlyNote what="creating tiers" />}
    </>
  );
}

function CreateTier({ onCreated }: { onCreated: () => void }) {
  const { submit, busy, error } = useSubmission();
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const body = formBody(form, ['points_threshold', 'multiplier']);
    if (typeof body.benefits === 'string') body.benefits = body.benefits.split(',').map((b) => b.trim()).filter(Boolean);
    if (await submit('POST', '/tiers', body)) {
      form.reset();
      onCreated();
    }
  }
  return (
    <section class="card">
      <h2 id="create-tier-title">Create a tier</h2>
      <form aria-labelledby="create-tier-title" onSubmit={onSubmit} class="grid-form">
        <Field label="Name" name="name" required error={error} />
        <Field label="Threshold" name="points_threshold" type="number" min={0} step={1} required error={error} hint="Lifetime earned points to reach it." />
        <Field label="Multiplier" name="multiplier" type="number" min={1} max={10} step={0.01} required error={error} hint="1.00 to 10.00" />
        <Field label="Benefits" name="benefits" error={error} hint="Comma-separated." />
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create tier
          </button>
        </div>
      </form>
    </section>
  );
}

import { api } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { type Column, DataTable, Listing } from '../components/data-table.js';
import { Empty, Field, FormError, Num, ReadOnlyNote, Time } from '../components/ui.js';
import { formBody } from '../form-data.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import type { Reward } from '../types.js';

const TYPES = ['digital', 'physical', 'discount', 'experience', 'achievement'];

const REWARD_COLUMNS: Column<Reward>[] = [
  {
    header: 'Reward',
    cell: (r) => (
      <>
        {r.title}
        <div class="muted small">{r.reward_type}</div>
      </>
    ),
  },
  { header: 'Cost', numeric: true, cell: (r) => <Num value={r.points_cost} /> },
  { header: 'Stock', numeric: true, cell: (r) => (r.stock_quantity === null ? '∞' : <Num value={r.stock_quantity} />) },
  { header: 'Redeemed', numeric: true, cell: (r) => <Num value={r.redeemed_count} /> },
  { header: 'Created', wide: true, cell: (r) => <Time iso={r.created_at} /> },
];

export function RewardsPage() {
  const { can } = useMe();
  const rewards = useLoad(() => api.page<Reward>('/rewards?limit=200'), []);
  const toggle = useSubmission();
  return (
    <>
      <PageHeader title="Rewards" />
      <section class="card">
        <FormError error={toggle.error} />
        <Listing loaded={rewards} empty={<Empty title="No rewards yet.">Create a reward below; customers can then redeem their points for it.</Empty>}>
          {(items) => (
            <DataTable
              rows={items}
              rowKey={(r) => r.id}
              columns={[
                ...REWARD_COLUMNS,
                {
                  header: 'Status',
                  cell: (r) => (
                    <>
                      <span class={`pill ${r.active ? 'pill-completed' : 'pill-cancelled'}`}>{r.active ? 'active' : 'inactive'}</span>
                      {can('rewards:write') && (
                        <button
                          type="button"
                          class="small-button"
                          disabled={toggle.busy}
                          aria-label={`${r.active ? 'Deactivate' : 'Activate'} ${r.title}`}
                          onClick={async () => {
                            if (await toggle.submit('PATCH', `/rewards/${r.id}`, { active: !r.active })) rewards.reload();
                          }}
                        >
                          {r.active ? 'Deactivate' : 'Activate'}
                        </button>
                      )}
                    </>
                  ),
                },
              ]}
            />
          )}
        </Listing>
      </section>
      {can('rewards:write') ? <CreateReward onCreated={rewards.reload} /> : <ReadOnlyNote what="creating rewards" />}
    </>
  );
}

function CreateReward({ onCreated }: { onCreated: () => void }) {
  const { submit, busy, error } = useSubmission();
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    if (await submit('POST', '/rewards', formBody(form, ['points_cost', 'stock_quantity']))) {
      form.reset();
      onCreated();
    }
  }
  return (
    <section class="card">
      <h2 id="create-reward-title">Create a reward</h2>
      <form aria-labelledby="create-reward-title" onSubmit={onSubmit} class="grid-form">
        <Field label="Title" name="title" required error={error} />
        <Field label="Points cost" name="points_cost" type="number" min={0} step={1} required error={error} />
        <Field
          label="Type"
          name="reward_type"
          error={error}
          control={(id) => (
            <select id={id} name="reward_type">
              {TYPES.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          )}
        />
        <Field label="Stock" name="stock_quantity" type="number" min={0} step={1} error={error} hint="Leave empty for unlimited." />
        <Field label="Description" name="description" error={error} />
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create reward
          </button>
        </div>
      </form>
    </section>
  );
}

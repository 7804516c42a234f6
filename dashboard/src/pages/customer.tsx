import { useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { Pager, useCursor } from '../components/pager.js';
import { type Column, DataTable, Listing } from '../components/data-table.js';
import { Empty, Field, FormError, LoadError, Loading, Num, Time } from '../components/ui.js';
import { formatChange, formatNumber } from '../format.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import { type Customer, customerName, type Lot, type Redemption, type Reward, type StreamEvent, type Transaction } from '../types.js';
import { ChainCheck } from './chain-check.js';

export function CustomerPage({ id }: { id: string }) {
  const { can, readOnly } = useMe();
  const customer = useLoad(() => api.get<Customer>(`/customers/${encodeURIComponent(id)}`), [id]);
  const [version, setVersion] = useState(0);
  const changed = () => {
    customer.reload();
    setVersion((v) => v + 1);
  };

  if (customer.error) {
    const missing = customer.error instanceof ApiError && customer.error.status === 404;
    return (
      <>
        <PageHeader title="Customer" />
        {missing ? <Empty title={`No customer with id ${id}.`}>Search for the customer on the customers page.</Empty> : <LoadError error={customer.error} />}
      </>
    );
  }
  if (!customer.data) return <Loading />;
  const c = customer.data;
  return (
    <>
      <PageHeader title={customerName(c)}>
        <span class="muted mono">{c.id}</span>
      </PageHeader>
      <section class="figures" aria-label="Points">
        <figure class="card stat" aria-labelledby="balance-label">
          <figcaption id="balance-label" class="stat-label">
            Balance
          </figcaption>
          <span class="stat-value">{formatNumber(c.points_balance)}</span>
        </figure>
        <Stat label="Pending" value={formatNumber(c.points_pending)} />
        <Stat label="Lifetime earned" value={formatNumber(c.lifetime_earned)} />
        <Stat label="Lifetime redeemed" value={formatNumber(c.lifetime_redeemed)} />
        <Stat label="Tier" value={c.tier ? `${c.tier.name} (×${c.tier.multiplier})` : 'None yet'} />
        <Stat label="Lifetime expired" value={formatNumber(c.lifetime_expired)} />
        <Stat
          label="Next expiring"
          value={c.next_expiring ? `${formatNumber(c.next_expiring.amount)} on ${c.next_expiring.expires_at.slice(0, 10)}` : 'Nothing expires'}
        />
      </section>
      <div class="columns">
        <section class="card">
          <h2>Profile</h2>
          <dl class="profile">
            <dt>Email</dt>
            <dd>{c.email ?? '—'}</dd>
            <dt>Phone</dt>
            <dd>{c.phone ?? '—'}</dd>
            <dt>External reference</dt>
            <dd>{c.external_reference ?? '—'}</dd>
            <dt>Customer since</dt>
            <dd>
              <Time iso={c.created_at} />
            </dd>
            <dt>Last change</dt>
            <dd>
              <Time iso={c.updated_at} />
            </dd>
          </dl>
        </section>
        {can('points:write') && (
          <section class="card">
            <h2>Actions</h2>
            <PointsActions customerId={c.id} onDone={changed} />
            <RedeemReward customerId={c.id} onDone={changed} />
          </section>
        )}
      </div>
      <Lots customerId={c.id} version={version} />
      <Ledger customerId={c.id} version={version} canReverse={can('points:write')} onReversed={changed} />
      <Redemptions customerId={c.id} version={version} onCancelled={changed} canCancel={can('points:write')} />
      {can('points:read') && !readOnly ? (
        <Stream customerId={c.id} version={version} />
      ) : (
        <p class="note">The raw event stream and its hash-chain check need a private key.</p>
      )}
    </>
  );
}

function Stat({ label, value }: { label: string; value: string }) {
  return (
    <div class="card stat">
      <span class="stat-label">{label}</span>
      <span class="stat-value">{value}</span>
    </div>
  );
}

const KINDS = {
  earn: { tab: 'Award', title: 'Award points', hint: 'Points to add (more than 0).' },
  deduct: { tab: 'Deduct', title: 'Deduct points', hint: 'Points to take away (more than 0), spent outside the reward catalogue.' },
  adjust: { tab: 'Adjust', title: 'Adjust points', hint: 'A correction of what was earned: positive or negative, not 0.' },
} as const;
type Kind = keyof typeof KINDS;

/** Award, deduct or adjust: one form at a time, so its field names stay unique on the page. */
function PointsActions({ customerId, onDone }: { customerId: string; onDone: () => void }) {
  const [kind, setKind] = useState<Kind>('earn');
  return (
    <div>
      <div role="tablist" aria-label="Points action" class="tabs">
        {(Object.keys(KINDS) as Kind[]).map((k) => (
          <button type="button" role="tab" key={k} aria-selected={k === kind} onClick={() => setKind(k)}>
            {KINDS[k].tab}
          </button>
        ))}
      </div>
      <PointsForm key={kind} kind={kind} customerId={customerId} onDone={onDone} />
    </div>
  );
}

function PointsForm({ kind, customerId, onDone }: { kind: Kind; customerId: string; onDone: () => void }) {
  const { submit, busy, error } = useSubmission();
  const [done, setDone] = useState<string | null>(null);
  const { title, hint } = KINDS[kind];
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    const amount = text('amount');
    const body: Record<string, unknown> = { type: kind, amount: amount === '' ? undefined : Number(amount) };
    if (text('reference')) body.reference = text('reference');
    if (text('description')) body.description = text('description');
    // datetime-local is the browser's local time; the API takes an instant.
    for (const field of ['available_at', 'expires_at']) if (text(field)) body[field] = new Date(text(field)).toISOString();
    setDone(null);
    const result = await submit<Transaction>('POST', `/customers/${encodeURIComponent(customerId)}/points/transaction`, body);
    if (result) {
      form.reset();
      setDone(`${title}: ${formatChange(kind === 'deduct' ? -result.amount : result.amount)}. The balance is now ${formatNumber(result.balance)}.`);
      onDone();
    }
  }
  return (
    <form aria-label={title} onSubmit={onSubmit} class="grid-form">
      <Field label="Amount" name="amount" type="number" inputMode="numeric" step={1} required error={error} hint={hint} />
      <Field label="Reference" name="reference" error={error} hint="Optional: your order or case number. A reference is used once per customer." />
      <Field label="Description" name="description" error={error} />
      {kind !== 'deduct' && (
        <>
          <Field label="Available from" name="available_at" type="datetime-local" error={error} hint="Optional: until then the points are pending. Default: the program's pending days." />
          <Field label="Expires at" name="expires_at" type="datetime-local" error={error} hint="Optional: default the program's expiry policy." />
        </>
      )}
      <FormError error={error} />
      {done && (
        <p class="success" role="status">
          {done}
        </p>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
          {title}
        </button>
      </div>
    </form>
  );
}

function RedeemReward({ customerId, onDone }: { customerId: string; onDone: () => void }) {
  const rewards = useLoad(() => api.page<Reward>('/rewards?limit=200'), []);
  const { submit, busy, error } = useSubmission();
  const active = rewards.data?.items.filter((r) => r.active) ?? [];
  async function onSubmit(e: Event) {
    e.preventDefault();
    const rewardId = String(new FormData(e.currentTarget as HTMLFormElement).get('reward_id') ?? '');
    if (await submit('POST', `/customers/${encodeURIComponent(customerId)}/redemptions`, { reward_id: rewardId })) onDone();
  }
  if (rewards.data && active.length === 0) return <p class="muted">No active rewards to redeem: create one on the rewards page.</p>;
  return (
    <form aria-label="Redeem a reward" onSubmit={onSubmit} class="grid-form redeem">
      <h3>Redeem a reward</h3>
      <Field
        label="Reward"
        name="reward_id"
        error={error}
        control={(id) => (
          <select id={id} name="reward_id" required>
            {active.map((r) => (
              <option value={r.id} key={r.id}>
                {r.title} — {formatNumber(r.points_cost)} points{r.stock_quantity !== null ? ` (${formatNumber(r.stock_quantity)} left)` : ''}
              </option>
            ))}
          </select>
        )}
      />
      <FormError error={error} />
      <div class="actions">
        <button type="submit" disabled={busy || !rewards.data}>
          Redeem
        </button>
      </div>
    </form>
  );
}

const LEDGER_LABELS: Record<string, string> = {
  earn: 'Earned',
  deduct: 'Deducted',
  adjust: 'Adjusted',
  event: 'Event',
  redemption: 'Redeemed',
  redemption_cancelled: 'Redemption cancelled',
  release: 'Released',
  expire: 'Expired',
  reversal: 'Reversed',
};
const DEBITS = new Set(['deduct', 'redemption', 'expire', 'reversal']);

const LEDGER_COLUMNS: Column<Transaction>[] = [
  { header: 'When', cell: (t) => <Time iso={t.created_at} /> },
  {
    header: 'What',
    cell: (t) => (
      <>
        {LEDGER_LABELS[t.type] ?? t.type}
        {t.description && <div class="muted small">{t.description}</div>}
      </>
    ),
  },
  {
    header: 'Points',
    numeric: true,
    cell: (t) => <span class={DEBITS.has(t.type) ? 'debit' : 'credit'}>{formatChange(DEBITS.has(t.type) ? -t.amount : t.amount)}</span>,
  },
  { header: 'Balance after', numeric: true, cell: (t) => <Num value={t.balance} /> },
  { header: 'Reference', wide: true, cell: (t) => <span class="mono small">{t.reference ?? ''}</span> },
];

/** Ledger lines a reversal can take back: credits (CONTRACT.md §13). */
const isCredit = (t: Transaction) => t.type === 'earn' || t.type === 'event' || (t.type === 'adjust' && t.amount > 0);

function Ledger({ customerId, version, canReverse, onReversed }: { customerId: string; version: number; canReverse: boolean; onReversed: () => void }) {
  const cursor = useCursor();
  const [reversing, setReversing] = useState<Transaction | null>(null);
  const ledger = useLoad(() => api.page<Transaction>(`/customers/${encodeURIComponent(customerId)}/transactions?limit=50${cursor.query()}`), [customerId, cursor.after, version]);
  const columns: Column<Transaction>[] = canReverse
    ? [
        ...LEDGER_COLUMNS,
        {
          header: 'Action',
          cell: (t) =>
            isCredit(t) && (
              <button type="button" class="small-button" aria-label={`Reverse transaction ${t.id}`} onClick={() => setReversing(t)}>
                Reverse
              </button>
            ),
        },
      ]
    : LEDGER_COLUMNS;
  return (
    <section class="card" aria-labelledby="ledger-title">
      <h2 id="ledger-title">Ledger</h2>
      {reversing && (
        <ReverseForm
          customerId={customerId}
          credit={reversing}
          onClose={() => setReversing(null)}
          onDone={() => {
            setReversing(null);
            onReversed();
          }}
        />
      )}
      <Listing loaded={ledger} empty={<Empty title="No points moved yet.">Award points above, or record an event for this customer through the API.</Empty>}>
        {(items, next) => (
          <>
            <DataTable rows={items} columns={columns} rowKey={(t) => t.id} />
            <Pager cursor={cursor} next={next} labels={['Earlier lines', 'Later lines']} />
          </>
        )}
      </Listing>
    </section>
  );
}

/** Reverses all or part of a credit, e.g. for a refunded order (POST …/transactions/{id}/reverse). */
function ReverseForm({ customerId, credit, onClose, onDone }: { customerId: string; credit: Transaction; onClose: () => void; onDone: () => void }) {
  const { submit, busy, error } = useSubmission();
  async function onSubmit(e: Event) {
    e.preventDefault();
    const data = new FormData(e.currentTarget as HTMLFormElement);
    const text = (name: string) => String(data.get(name) ?? '').trim();
    const body: Record<string, unknown> = {};
    if (text('amount')) body.amount = Number(text('amount'));
    if (text('reference')) body.reference = text('reference');
    if (text('description')) body.description = text('description');
    const path = `/customers/${encodeURIComponent(customerId)}/transactions/${encodeURIComponent(credit.id)}/reverse`;
    if (await submit('POST', path, body)) onDone();
  }
  return (
    <form aria-label="Reverse a transaction" onSubmit={onSubmit} class="grid-form reverse">
      <h3>
        Reverse {formatNumber(credit.amount)} points of <span class="mono">{credit.id}</span>
      </h3>
      <Field label="Points to reverse" name="amount" type="number" inputMode="numeric" step={1} min={1} error={error} hint="Leave empty to reverse everything not reversed yet." />
      <Field label="Refund reference" name="reference" error={error} hint="Optional: your refund id. A reference is used once per customer." />
      <Field label="Reason" name="description" error={error} />
      <FormError error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
          Reverse points
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

const LOT_COLUMNS: Column<Lot>[] = [
  { header: 'Credit', cell: (l) => <span class="mono small">{l.transaction_id}</span> },
  { header: 'Points', numeric: true, cell: (l) => <Num value={l.amount} /> },
  { header: 'Left', numeric: true, cell: (l) => <Num value={l.remaining} /> },
  { header: 'Status', cell: (l) => <span class={`pill pill-${l.status}`}>{l.status}</span> },
  { header: 'Spendable from', cell: (l) => (l.available_at ? <Time iso={l.available_at} /> : <span class="muted">at once</span>) },
  { header: 'Expires', cell: (l) => (l.expires_at ? <Time iso={l.expires_at} /> : <span class="muted">never</span>) },
];

/** The customer's lots (CONTRACT.md §13): what is left of each credit, soonest to expire first. */
function Lots({ customerId, version }: { customerId: string; version: number }) {
  const [all, setAll] = useState(false);
  const cursor = useCursor();
  const lots = useLoad(
    () => api.page<Lot>(`/customers/${encodeURIComponent(customerId)}/lots?limit=50${all ? '&all=true' : ''}${cursor.query()}`),
    [customerId, all, cursor.after, version],
  );
  return (
    <section class="card" aria-labelledby="lots-title">
      <h2 id="lots-title">Lots</h2>
      <label class="check lots-toggle">
        <input type="checkbox" checked={all} onChange={(e) => setAll((e.currentTarget as HTMLInputElement).checked)} /> Show spent, expired and reversed lots too
      </label>
      <Listing loaded={lots} empty={<Empty title={all ? 'No credits yet.' : 'No points left in any lot.'} />}>
        {(items, next) => (
          <>
            <DataTable rows={items} columns={LOT_COLUMNS} rowKey={(l) => l.transaction_id} />
            <Pager cursor={cursor} next={next} labels={['Earlier lots', 'Later lots']} />
          </>
        )}
      </Listing>
    </section>
  );
}

function Redemptions({ customerId, version, onCancelled, canCancel }: { customerId: string; version: number; onCancelled: () => void; canCancel: boolean }) {
  const redemptions = useLoad(() => api.page<Redemption>(`/customers/${encodeURIComponent(customerId)}/redemptions?limit=200`), [customerId, version]);
  const rewards = useLoad(() => api.page<Reward>('/rewards?limit=200'), [version]);
  const { submit, busy, error } = useSubmission();
  const title = (rewardId: string) => rewards.data?.items.find((r) => r.id === rewardId)?.title ?? rewardId;
  const columns: Column<Redemption>[] = [
    { header: 'When', cell: (r) => <Time iso={r.created_at} /> },
    { header: 'Reward', cell: (r) => title(r.reward_id) },
    { header: 'Points', numeric: true, cell: (r) => <Num value={r.points_cost} /> },
    { header: 'Status', cell: (r) => <span class={`pill pill-${r.status}`}>{r.status}</span> },
  ];
  if (canCancel) {
    columns.push({
      header: 'Action',
      cell: (r) =>
        r.status === 'completed' && (
          <button
            type="button"
            class="small-button"
            disabled={busy}
            aria-label={`Cancel redemption ${r.id}`}
            onClick={async () => {
              if (await submit('POST', `/customers/${encodeURIComponent(customerId)}/redemptions/${r.id}/cancel`, {})) onCancelled();
            }}
          >
            Cancel
          </button>
        ),
    });
  }
  return (
    <section class="card" aria-labelledby="redemptions-title">
      <h2 id="redemptions-title">Redemptions</h2>
      <FormError error={error} />
      <Listing loaded={redemptions} empty={<Empty title="No redemptions yet." />}>
        {(items) => <DataTable rows={items} columns={columns} rowKey={(r) => r.id} />}
      </Listing>
    </section>
  );
}

const STREAM_COLUMNS: Column<StreamEvent>[] = [
  { header: '#', numeric: true, cell: (e) => e.position },
  {
    header: 'Event',
    cell: (e) => (
      <details>
        <summary>{e.type}</summary>
        <pre>{JSON.stringify(e.data, null, 2)}</pre>
      </details>
    ),
  },
  { header: 'Recorded', cell: (e) => <Time iso={e.recorded_at} /> },
  { header: 'Hash', wide: true, cell: (e) => <span class="mono small">{String(e.metadata.hash ?? '').slice(0, 12)}</span> },
];

function Stream({ customerId, version }: { customerId: string; version: number }) {
  const stream = useLoad(() => api.page<StreamEvent>(`/customers/${encodeURIComponent(customerId)}/stream?limit=200`), [customerId, version]);
  return (
    <section class="card" aria-labelledby="stream-title">
      <h2 id="stream-title">Event stream</h2>
      <ChainCheck customerId={customerId} version={version} />
      <Listing loaded={stream} empty={<Empty title="No events." />}>
        {(items, next) => (
          <>
            <DataTable rows={items} columns={STREAM_COLUMNS} rowKey={(e) => e.position} />
            {next && <p class="muted small">Showing the first 200 events.</p>}
          </>
        )}
      </Listing>
    </section>
  );
}

import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiError, type Page } from '../api.js';
import { type Column, DataTable } from '../components/data-table.js';
import { PageHeader } from '../components/layout.js';
import { Pager, useCursor } from '../components/pager.js';
import { Empty, Field, FormError, LoadError, Loading, Num, Time } from '../components/ui.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import { type Customer, customerName } from '../types.js';

/** What a search term is: an id, an email, or else an external reference. */
function lookup(term: string): string {
  if (term.startsWith('cust_')) return `/customers/${encodeURIComponent(term)}`;
  if (term.includes('@')) return `/customers?email=${encodeURIComponent(term)}`;
  return `/customers?external_reference=${encodeURIComponent(term)}`;
}

async function search(term: string, after: string | null, readOnly: boolean): Promise<Page<Customer> | null> {
  if (!term) {
    if (readOnly) return null;
    return api.page<Customer>(`/customers?limit=20${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`);
  }
  if (term.startsWith('cust_')) {
    try {
      return { items: [await api.get<Customer>(lookup(term))], next: null };
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return { items: [], next: null };
      throw e;
    }
  }
  return api.page<Customer>(lookup(term));
}

export function CustomersPage() {
  const { readOnly, can } = useMe();
  const [term, setTerm] = useState('');
  const [query, setQuery] = useState('');
  const cursor = useCursor();
  const list = useLoad(() => search(query, cursor.after, readOnly), [query, cursor.after, readOnly]);

  return (
    <>
      <PageHeader title="Customers" />
      <form
        class="search"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery(term.trim());
          cursor.reset();
        }}
      >
        <label for="customer-search">Search customers</label>
        <div class="search-row">
          <input
            id="customer-search"
            type="search"
            placeholder="Email, external reference or cust_… id"
            value={term}
            onInput={(e) => setTerm((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Search</button>
        </div>
      </form>
      {list.error ? (
        <LoadError error={list.error} />
      ) : list.loading && !list.data ? (
        <Loading />
      ) : list.data === null ? (
        <p class="note">With a public key, look a customer up by exact email, external reference or id.</p>
      ) : list.data && list.data.items.length === 0 ? (
        query ? (
          <Empty title={`No customer matches “${query}”.`}>Search by the exact email, external reference or customer id.</Empty>
        ) : (
          <Empty title="No customers yet.">Create the first one with the form below, or from your shop through the API.</Empty>
        )
      ) : (
        list.data && (
          <section class="card">
            <DataTable rows={list.data.items} columns={CUSTOMER_COLUMNS} rowKey={(c) => c.id} />
            <Pager cursor={cursor} next={list.data.next} />
          </section>
        )
      )}
      {can('customers:write') && <CreateCustomer onCreated={list.reload} />}
    </>
  );
}

const CUSTOMER_COLUMNS: Column<Customer>[] = [
  {
    header: 'Customer',
    cell: (c) => (
      <>
        <a href={`/dashboard/customers/${c.id}`}>{customerName(c)}</a>
        <div class="muted small mono">{c.id}</div>
      </>
    ),
  },
  { header: 'Email', wide: true, cell: (c) => c.email ?? <span class="muted">—</span> },
  { header: 'Tier', cell: (c) => c.tier?.name ?? <span class="muted">—</span> },
  { header: 'Points', numeric: true, cell: (c) => <Num value={c.points_balance} /> },
  { header: 'Since', wide: true, cell: (c) => <Time iso={c.created_at} /> },
];

const FIELDS = [
  ['email', 'Email', 'email'],
  ['phone', 'Phone', 'tel'],
  ['first_name', 'First name', 'text'],
  ['last_name', 'Last name', 'text'],
  ['external_reference', 'External reference', 'text'],
] as const;

function CreateCustomer({ onCreated }: { onCreated: () => void }) {
  const { submit, busy, error } = useSubmission();
  const { route } = useLocation();
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const body = Object.fromEntries(FIELDS.map(([name]) => [name, String(form.get(name) ?? '').trim()]).filter(([, v]) => v !== ''));
    const created = await submit<Customer>('POST', '/customers', body);
    if (created) {
      onCreated();
      route(`/dashboard/customers/${created.id}`);
    }
  }
  return (
    <section class="card">
      <h2 id="create-customer-title">Create a customer</h2>
      <form aria-labelledby="create-customer-title" onSubmit={onSubmit} class="grid-form">
        {FIELDS.map(([name, label, type]) => (
          <Field key={name} label={label} name={name} type={type} error={error} />
        ))}
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create customer
          </button>
        </div>
      </form>
    </section>
  );
}

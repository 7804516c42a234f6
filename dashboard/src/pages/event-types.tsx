import { useState } from 'preact/hooks';
import { api, ApiError, NetworkError } from '../api.js';
import { PageHeader } from '../components/layout.js';
import { type Column, DataTable, Listing } from '../components/data-table.js';
import { Empty, Field, FormError, Num, ReadOnlyNote } from '../components/ui.js';
import { formBody, parseJsonField } from '../form-data.js';
import { formatNumber } from '../format.js';
import { useLoad } from '../load.js';
import { useMe } from '../me.js';
import { useSubmission } from '../submission.js';
import type { EventType } from '../types.js';

const EVENT_TYPE_COLUMNS: Column<EventType>[] = [
  {
    header: 'Name',
    cell: (t) => (
      <>
        {t.display_name}
        <div class="muted small mono">{t.name}</div>
      </>
    ),
  },
  { header: 'Default points', numeric: true, cell: (t) => <Num value={t.default_points} /> },
  {
    header: 'Rules',
    cell: (t) =>
      t.rules.length === 0 ? (
        <span class="muted">none</span>
      ) : (
        <details>
          <summary>{t.rules.length === 1 ? '1 rule' : `${t.rules.length} rules`}</summary>
          <pre>{JSON.stringify(t.rules, null, 2)}</pre>
        </details>
      ),
  },
];

export function EventTypesPage() {
  const { can } = useMe();
  const types = useLoad(() => api.page<EventType>('/event-types?limit=200'), []);
  return (
    <>
      <PageHeader title="Event types" />
      <section class="card">
        <Listing loaded={types} empty={<Empty title="No event types yet.">Create one below (for example “purchase” with 1 point per unit spent); your shop then records events of that type.</Empty>}>
          {(items) => <DataTable rows={items} columns={EVENT_TYPE_COLUMNS} rowKey={(t) => t.id} />}
        </Listing>
      </section>
      {types.data && types.data.items.length > 0 && <RulePreview types={types.data.items} />}
      {can('rewards:write') ? <CreateEventType onCreated={types.reload} /> : <ReadOnlyNote what="creating event types" />}
    </>
  );
}

interface Preview {
  event_type: string;
  default_points: number;
  rules: Array<{ index: number; description: string | null; applies: boolean; points: number }>;
  points: number;
}

/** Properties in, points out: what an event would award a customer without a tier (records nothing). */
function RulePreview({ types }: { types: EventType[] }) {
  const [result, setResult] = useState<Preview | null>(null);
  const [error, setError] = useState<ApiError | NetworkError | Error | null>(null);
  const [busy, setBusy] = useState(false);
  async function onSubmit(e: Event) {
    e.preventDefault();
    const data = new FormData(e.currentTarget as HTMLFormElement);
    const parsed = parseJsonField(String(data.get('properties') ?? ''), 'Properties');
    if (parsed.error) return setError(new Error(parsed.error));
    setBusy(true);
    setError(null);
    try {
      const name = encodeURIComponent(String(data.get('event_type')));
      setResult(await api.write<Preview>('POST', `/event-types/${name}/preview`, { properties: parsed.value ?? {} }));
    } catch (err) {
      setResult(null);
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card">
      <h2 id="preview-title">Rule preview</h2>
      <form aria-labelledby="preview-title" onSubmit={onSubmit} class="grid-form">
        <Field
          label="Event type"
          name="event_type"
          control={(id) => (
            <select id={id} name="event_type">
              {types.map((t) => (
                <option key={t.name} value={t.name}>
                  {t.display_name} ({t.name})
                </option>
              ))}
            </select>
          )}
        />
        <Field
          label="Properties"
          name="properties"
          hint='JSON, for example {"amount": 120}'
          control={(id) => <textarea id={id} name="properties" rows={3} spellcheck={false} placeholder='{"amount": 120}' />}
        />
        <FormError error={error} />
        <div class="actions">
          <button type="submit" disabled={busy}>
            Preview points
          </button>
        </div>
      </form>
      {result && (
        <div class="preview" role="status" aria-label="Preview result">
          <table>
            <tbody>
              <tr>
                <th scope="row">Default points</th>
                <td class="num">{formatNumber(result.default_points)}</td>
              </tr>
              {result.rules.map((r) => (
                <tr key={r.index} class={r.applies ? '' : 'muted'}>
                  <th scope="row">
                    Rule {r.index + 1}
                    {r.description ? `: ${r.description}` : ''} {r.applies ? '' : '(does not apply)'}
                  </th>
                  <td class="num">{formatNumber(r.points)}</td>
                </tr>
              ))}
              <tr class="total">
                <th scope="row">Total for a customer without a tier</th>
                <td class="num">{formatNumber(result.points)}</td>
              </tr>
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function CreateEventType({ onCreated }: { onCreated: () => void }) {
  const { submit, busy, error } = useSubmission();
  const [rulesError, setRulesError] = useState<string | null>(null);
  async function onSubmit(e: Event) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const body = formBody(form, ['default_points']);
    const rules = parseJsonField(String(body.rules ?? ''), 'Rules');
    setRulesError(rules.error ?? null);
    if (rules.error) return;
    if (rules.value === undefined) delete body.rules;
    else body.rules = rules.value;
    if (await submit('POST', '/event-types', body)) {
      form.reset();
      onCreated();
    }
  }
  return (
    <section class="card">
      <h2 id="create-event-type-title">Create an event type</h2>
      <form aria-labelledby="create-event-type-title" onSubmit={onSubmit} class="grid-form">
        <Field label="Name" name="name" required error={error} hint="Lowercase letters, digits, _ . - (used by your shop)." />
        <Field label="Display name" name="display_name" required error={error} />
        <Field label="Default points" name="default_points" type="number" min={0} step={1} required error={error} />
        <Field
          label="Rules"
          name="rules"
          error={error}
          hint='Optional JSON list, for example [{"points_per_unit": 1, "unit_property": "amount"}]'
          control={(id) => <textarea id={id} name="rules" rows={4} spellcheck={false} />}
        />
        {rulesError && (
          <p class="form-error" role="alert">
            {rulesError}
          </p>
        )}
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create event type
          </button>
        </div>
      </form>
    </section>
  );
}

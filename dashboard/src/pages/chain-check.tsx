import { api } from '../api.js';
import { LoadError, Loading } from '../components/ui.js';
import { useLoad } from '../load.js';

interface Audit {
  customer_id: string;
  events: number;
  chain_intact: boolean;
  breaks: Array<{ position: number; problem: string }>;
  read_model_matches: boolean;
  drifts: Array<{ field: string; log: unknown; read_model: unknown }>;
}

/** The customer's hash chain and read models checked against the log (GET /customers/{id}/audit). */
export function ChainCheck({ customerId, version }: { customerId: string; version: number }) {
  const audit = useLoad(() => api.get<Audit>(`/customers/${encodeURIComponent(customerId)}/audit`), [customerId, version]);
  if (audit.error) return <LoadError error={audit.error} />;
  if (!audit.data) return <Loading />;
  const a = audit.data;
  return (
    <div class={`chain ${a.chain_intact ? 'chain-ok' : 'chain-broken'}`} role="status" aria-label="Hash chain">
      <p>
        <strong>{a.chain_intact ? 'Hash chain intact' : 'Hash chain broken'}</strong>
        {a.chain_intact
          ? ` — all ${a.events} events hash to their successors.`
          : ` — ${a.breaks.map((b) => `position ${b.position}: ${b.problem}`).join('; ')}`}
      </p>
      <p>{a.read_model_matches ? 'The read models match the log.' : `The read models differ from the log: ${a.drifts.map((d) => d.field).join(', ')}.`}</p>
      <button type="button" class="small-button" onClick={audit.reload} disabled={audit.loading}>
        Check again
      </button>
    </div>
  );
}

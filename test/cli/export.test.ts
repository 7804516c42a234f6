import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeExport } from '../../src/cli/export-commands.js';
import { provisionBusiness } from '../../src/cli/provision.js';
import type { ExportFormat } from '../../src/cli/export-format.js';
import type { ExportKind, ExportRequest } from '../../src/projections/export-rows.js';
import { freshStore, killAllProcesses, type ProcessStore, runCli } from '../e2e/process-helpers.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { apiPoster, storeOpener } from './cli-support.js';
import { runInProcess } from './in-process.js';

/** Everything an export writes, and the largest chunk it wrote at once (the page it held). */
async function exported(t: TestApp, kind: ExportKind, format: ExportFormat, request: ExportRequest) {
  const out = new PassThrough();
  const chunks: string[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')));
  const progress: number[] = [];
  const written = await writeExport(t.services.db, kind, format, request, out, { start: (total) => progress.push(total), update: (done) => progress.push(done) });
  return { text: chunks.join(''), written, progress };
}

/** A CSV document parsed as RFC 4180 (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') row.push(field), (field = '');
    else if (ch === '\n') row.push(field), rows.push(row), (row = []), (field = '');
    else field += ch;
  }
  return rows;
}

describe('loyalty export: the rows it writes', () => {
  let t: TestApp;
  let businessId: string;
  let customerId: string;
  let now = new Date('2026-01-31T23:00:00.000Z');

  beforeAll(async () => {
    t = await startTestApp({ clock: { now: () => now } });
    const business = await t.business();
    businessId = business.business_id;
    const post = async (path: string, body: unknown) => {
      const response = await t.request('POST', path, { key: business.private_key, body });
      expect(response.status, response.text).toBe(201);
      return response.body;
    };
    // A name with a comma, a quote and a line break: what CSV quoting is for.
    const customer = await post('/api/v1/customers', { email: 'export@example.com', first_name: 'Ann, "the first"\nof her name', metadata: { shop: 'north' } });
    customerId = customer.id;
    await post('/api/v1/event-types', { name: 'visit', display_name: 'Visit', default_points: 3 });
    for (let i = 1; i <= 7; i++) {
      now = new Date(Date.UTC(2026, 1, i, 12)); // 1–7 February
      await post(`/api/v1/customers/${customerId}/points/transaction`, { type: 'earn', amount: i * 10, reference: `order-${i}`, metadata: { till: i } });
    }
    await post('/api/v1/events', { customer_id: customerId, event_type: 'visit', properties: { door: 'east' } });
    // Another business's rows are never in the export.
    const other = await t.business();
    await t.request('POST', '/api/v1/customers', { key: other.private_key, body: { email: 'other@example.com' } });
  });
  afterAll(() => t.close());

  it('ledger as CSV: a header, one row per line oldest first, across pages, numbers and times as text', async () => {
    const { text, written, progress } = await exported(t, 'ledger', 'csv', { businessId, pageSize: 3 });
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual(['entry_id', 'business_id', 'customer_id', 'entry_type', 'amount', 'points_change', 'balance_after', 'base_amount', 'multiplier', 'description', 'reference', 'metadata', 'created_at']);
    expect(written).toBe(8);
    expect(rows.map((r) => [r[3], r[4], r[6], r[10]])).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7].map((i) => ['earn', String(i * 10), String(5 * i * (i + 1)), `order-${i}`]),
      ['event', '3', '283', ''],
    ]);
    expect(rows[0]![11]).toBe('{"till":1}');
    expect(rows[0]![12]).toBe('2026-02-01T12:00:00.000Z');
    expect(progress).toEqual([8, 3, 6, 8]); // the total first, then after each page of 3
  });

  it('customers as CSV: a field with a comma, quotes and a line break comes back whole', async () => {
    const { text } = await exported(t, 'customers', 'csv', { businessId });
    const [header, row, ...more] = parseCsv(text);
    expect(more).toEqual([]);
    expect(row![header!.indexOf('first_name')]).toBe('Ann, "the first"\nof her name');
    expect(row![header!.indexOf('points_balance')]).toBe('283');
    expect(row![header!.indexOf('metadata')]).toBe('{"shop":"north"}');
  });

  it('events as JSON Lines: one object a line, numbers as numbers, properties nested', async () => {
    const { text } = await exported(t, 'events', 'jsonl', { businessId });
    const lines = text.trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({ customer_id: customerId, event_type: 'visit', properties: { door: 'east' }, points_awarded: 3, multiplier: 1, balance_after: 283 }),
    ]);
    expect(lines[0].recorded_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('--from is inclusive and --to exclusive, so consecutive windows add up to the whole', async () => {
    const day = (d: number) => new Date(Date.UTC(2026, 1, d, 12));
    const window = async (from?: Date, to?: Date) =>
      (await exported(t, 'ledger', 'jsonl', { businessId, from, to })).text.trimEnd().split('\n').filter(Boolean).map((l) => JSON.parse(l).reference);
    expect(await window(day(3), day(5))).toEqual(['order-3', 'order-4']);
    const pieces = [...(await window(undefined, day(3))), ...(await window(day(3), day(6))), ...(await window(day(6)))];
    expect(pieces).toEqual([...(await window())]);
    expect(await window(day(7))).toEqual(['order-7', null]); // the last earn, and the event recorded at the same instant
  });
});

/**
 * The first test runs the built program as a process (the export streamed to a real pipe); the
 * refusals run the same program in this process (./in-process.ts).
 */
describe('loyalty export: the command', () => {
  let store: ProcessStore;
  let businessId: string;
  const withStore = storeOpener(() => store);
  beforeAll(async () => {
    store = await freshStore();
    await withStore(async (services) => {
      const { business_id, private_key } = await provisionBusiness(services, 'Shop', 'unlimited');
      businessId = business_id;
      const post = apiPoster(services, private_key);
      for (const email of ['a@example.com', 'b@example.com']) await post('/customers', { email });
    });
  }, 120_000);
  afterAll(async () => {
    await killAllProcesses();
    await store.dispose();
  });

  it('writes the export on stdout and what it did on stderr', async () => {
    const result = await runCli(['export', 'customers', '--business', businessId, '--format', 'csv'], store);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^customer_id,business_id,email,/);
    expect(lines.slice(1).map((line) => line.split(',')[2])).toEqual(['a@example.com', 'b@example.com']);
    expect(result.stderr).toMatch(/Exported 2 customers \(csv\) in \d+\.\d s\./);
  }, 60_000);

  it('refuses a bad date, a reversed window, an unknown business, an unknown format and an unwritable file with one line, exit 1', async () => {
    // One after another: on the embedded store one owner at a time may open it.
    const runs = [];
    for (const args of [
      ['--business', businessId, '--format', 'csv', '--from', '2026-02-30x'],
      ['--business', businessId, '--format', 'csv', '--from', '2026-02-02', '--to', '2026-02-01'],
      ['--business', 'biz_nope', '--format', 'jsonl'],
      ['--business', businessId, '--format', 'xlsx'],
      ['--business', businessId, '--format', 'csv', '--output', '/nonexistent-directory/ledger.csv'],
    ]) {
      runs.push(await runInProcess(['export', 'ledger', ...args], store));
    }
    const [badDate, reversed, unknown, format, unwritable] = runs;
    expect(badDate!.stderr).toContain("--from must be an ISO 8601 date or date-time");
    expect(reversed!.stderr).toContain('--to must be later than --from.');
    expect(unknown!.stderr).toContain("No business with id 'biz_nope'.");
    expect(format!.stderr).toContain("option '--format <format>' argument 'xlsx' is invalid");
    expect(unwritable!.stderr).toContain("Cannot write '/nonexistent-directory/ledger.csv'");
    for (const run of runs) {
      expect(run!.code, run!.stderr).toBe(1);
      expect(run!.stdout).toBe('');
    }
  }, 60_000);
});

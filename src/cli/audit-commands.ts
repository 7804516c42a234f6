import type { Command } from 'commander';
import { auditIsClean, formatAuditReport } from '../audit/audit-report.js';
import { auditStore } from '../audit/audit-store.js';
import { formatStatement, replayCustomer } from '../audit/replay-customer.js';
import { streams } from '../events/streams.js';
import type { EventStore, StoredEvent } from '../store/event-store.js';
import type { CliKit } from './cli-kit.js';

/** `loyalty audit verify | replay`. */
export function registerAuditCommands(program: Command, kit: CliKit): void {
  const audit = program.command('audit').description('check the event log and the read models against each other');

  audit
    .command('verify')
    .description('check every hash chain, fold every customer stream again and diff it against the read models (exit 1 on any problem)')
    .option('--customer <id>', 'only this customer')
    .option('--json', 'print one JSON object: {clean, events, streams, customers, breaks, drifts}')
    .action((opts: { customer?: string; json?: boolean }) =>
      kit.withServices(async (services) => {
        if (opts.customer !== undefined) await assertCustomerExists(services.store, opts.customer, kit);
        const report = await auditStore(services.db, services.store, { customerId: opts.customer });
        const clean = auditIsClean(report);
        kit.io.stdout.write(opts.json ? `${JSON.stringify({ clean, ...report })}\n` : `${formatAuditReport(report)}\n`);
        if (!clean) kit.io.setExitCode(1);
      }),
    );

  audit
    .command('replay')
    .description('print a customer’s statement: every event of its stream with the balance, lifetime totals and tier after it')
    .requiredOption('--customer <id>', 'the customer')
    .option('--json', 'print one JSON object: {customer_id, statement: [...]}')
    .action((opts: { customer: string; json?: boolean }) =>
      kit.withServices(
        async (services) => {
          const events = await assertCustomerExists(services.store, opts.customer, kit);
          const statement = replayCustomer(events);
          kit.io.stdout.write(
            opts.json ? `${JSON.stringify({ customer_id: opts.customer, statement })}\n` : `${formatStatement(opts.customer, statement)}\n`,
          );
        },
        { catchUp: false },
      ),
    );
}

async function assertCustomerExists(store: EventStore, customerId: string, kit: CliKit): Promise<StoredEvent[]> {
  const events = await store.readStream(streams.customer(customerId));
  if (events.length === 0) throw kit.fail(`No customer with id '${customerId}' in the event log.`);
  return events;
}

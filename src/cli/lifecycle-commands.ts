import type { Command } from 'commander';
import { counted } from '../plural.js';
import type { CustomerRun } from '../lifecycle/scheduler.js';
import type { CliKit } from './cli-kit.js';

/** `loyalty lifecycle run`: the due work of every customer, done now, and what it was. */
export function registerLifecycleCommands(program: Command, kit: CliKit): void {
  const lifecycle = program.command('lifecycle').description('points lifecycle: releases, expiring notices, expiries, rolling downgrades');

  lifecycle
    .command('run')
    .description('do all the due work now (what the workers do within 2 s of its time) and print what was done')
    .option('--json', 'print a JSON array: one object per customer worked on')
    .action((opts: { json?: boolean }) =>
      kit.withServices(async (services) => {
        const runs = await services.scheduler.runUntilIdle();
        await services.projections.catchUp();
        const done = runs.filter((r) => r.work.length > 0);
        if (opts.json) {
          kit.io.stdout.write(`${JSON.stringify(done.map(runJson))}\n`);
          return;
        }
        const lines = done.flatMap((run) => run.work.map((w) => `${run.customer_id}  ${describe(w)}`));
        const total = done.reduce((sum, r) => sum + r.work.length, 0);
        kit.io.stdout.write(`${[...lines, `Done: ${counted(total, 'piece')} of due work for ${counted(done.length, 'customer')}.`].join('\n')}\n`);
      }),
    );
}

function runJson(run: CustomerRun) {
  return { customer_id: run.customer_id, business_id: run.business_id, work: run.work, next_due_at: run.nextDueAt?.toISOString() ?? null };
}

const VERBS: Record<string, string> = {
  PointsReleased: 'released',
  PointsExpiringNotified: 'notified: expiring',
  PointsExpired: 'expired',
  TierDowngraded: 'downgraded',
};

function describe(work: CustomerRun['work'][number]): string {
  const verb = VERBS[work.type] ?? work.type;
  const points = work.amount === null ? '' : ` ${work.amount} points`;
  const lot = work.lot === null ? '' : ` of lot ${work.lot}`;
  return `${verb}${points}${lot} at ${work.at}`;
}

import type { Command } from 'commander';
import { counted } from '../plural.js';
import { formatProjectionStatus, projectionStatus } from '../projections/projection-status.js';
import { PROJECTORS } from '../projectors.js';
import { rebuildProjections } from '../projections/rebuild.js';
import type { CliKit } from './cli-kit.js';
import { REBUILD_STAGES, rebuildProgressBar } from './progress-bar.js';

/** `loyalty projections status | rebuild [NAME]`. */
export function registerProjectionCommands(program: Command, kit: CliKit): void {
  const projections = program.command('projections').description('inspect and rebuild the read models');

  projections
    .command('status')
    .description('each projector’s checkpoint and lag (events in the log after it)')
    .option('--json', 'print a JSON array')
    .action((opts: { json?: boolean }) =>
      kit.withServices(
        async (services) => {
          const statuses = await projectionStatus(services.db, services.store, PROJECTORS);
          kit.io.stdout.write(opts.json ? `${JSON.stringify(statuses)}\n` : `${formatProjectionStatus(statuses)}\n`);
        },
        { catchUp: false },
      ),
    );

  projections
    .command('rebuild')
    .argument('[name]', `one projector: ${PROJECTORS.filter((p) => !p.reactor).map((p) => p.name).join(', ')} (the reactors — webhooks, due-work — are never rebuilt)`)
    .description('replay the log into fresh tables and swap them in while the service keeps serving (all projectors but the reactors when NAME is omitted)')
    .action((name: string | undefined) =>
      kit.withServices(
        async (services) => {
          const chosen = name === undefined ? PROJECTORS.filter((p) => !p.reactor) : PROJECTORS.filter((p) => p.name === name);
          if (chosen.length === 0) throw kit.fail(`No projector named '${name}'. Known: ${PROJECTORS.map((p) => p.name).join(', ')}.`);
          if (chosen[0]!.reactor) {
            throw kit.fail(`'${name}' is a reactor (it queues webhook deliveries or due work); rebuilding it would repeat them, so it is never rebuilt.`);
          }
          // One pass over the log for all of them: each page is read once and applied to every copy.
          const names = chosen.map((p) => p.name).join(', ');
          const started = Date.now();
          const bar = rebuildProgressBar(kit.io.stderr);
          bar.start(1, 0, { projector: names, rate: 0, stage: REBUILD_STAGES.replay });
          const result = await rebuildProjections(services.database, services.store, chosen, {
            onProgress: ({ done, total, stage }) => {
              const seconds = Math.max((Date.now() - started) / 1000, 0.001);
              bar.setTotal(total);
              // The rate is the replay's: the stages after it count no events.
              bar.update(done, stage === 'replay' ? { rate: Math.round(done / seconds), stage: REBUILD_STAGES.replay } : { stage: REBUILD_STAGES[stage] });
            },
          }).finally(() => bar.stop());
          const seconds = ((Date.now() - started) / 1000).toFixed(1);
          for (const schema of result.abandonedDropped) kit.io.stderr.write(`Dropped schema ${schema}: the copies of a rebuild that stopped halfway.\n`);
          const how =
            result.swap === 'renamed'
              ? "the copies took the live tables' names"
              : `the copies' rows replaced the live rows: ${result.rowsBecause} (docs/read-models.md, "Rebuilds")`;
          for (const projector of chosen) {
            kit.io.stdout.write(
              `Rebuilt ${projector.name} (${projector.tables.join(', ')}): ${counted(result.events, 'event')} replayed in ${seconds} s, checkpoint ${result.checkpoint.globalPosition}; ${how}.\n`,
            );
          }
        },
        { catchUp: false },
      ),
    );
}

import { counted } from '../plural.js';
import type { AuditReport } from './audit-store.js';

export function auditIsClean(report: AuditReport): boolean {
  return report.breaks.length === 0 && report.drifts.length === 0;
}

const show = (value: unknown) => (typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : JSON.stringify(value));

/** One line when clean; otherwise a line per problem, hash-chain breaks first. */
export function formatAuditReport(report: AuditReport): string {
  const scope = `${counted(report.events, 'event')} in ${counted(report.streams, 'stream')}, ${counted(report.customers, 'customer')}`;
  if (auditIsClean(report)) return `Audit clean: ${scope}; every hash chain holds and the read models match the log.`;
  const problems = report.breaks.length + report.drifts.length;
  return [
    `Audit found ${counted(problems, 'problem')} (checked ${scope}):`,
    ...report.breaks.map((b) => `  broken chain  stream ${b.stream} position ${b.position}: ${b.problem}`),
    ...report.drifts.map((d) => `  drift         customer ${d.customerId} ${d.field}: log ${show(d.log)}, read model ${show(d.readModel)}`),
  ].join('\n');
}

import { accessProjector } from './projections/access/access-projector.js';
import { catalogProjector } from './projections/catalog/catalog-projector.js';
import { customersProjector } from './projections/customers/customers-projector.js';
import type { Projector } from './projections/projector.js';
import { dailyPointsProjector } from './projections/stats/daily-points-projector.js';
import { webhooksProjector } from './webhooks/webhooks-projector.js';
import { dueWorkReactor } from './lifecycle/due-work-reactor.js';

/**
 * Every projector the service runs, the webhooks and due-work reactors among them (wired here, at
 * composition, so `src/projections` knows no reactor). One runner applies them all in one
 * transaction per batch, in this order: the due-work reactor reads the lots the customers
 * projector has just written.
 */
export const PROJECTORS: readonly Projector[] = [
  accessProjector,
  customersProjector,
  catalogProjector,
  dailyPointsProjector,
  webhooksProjector,
  dueWorkReactor,
];

import type { Plan } from '../events/business-events.js';
import type { Services } from '../services.js';
import { cliContext } from './cli-context.js';

export interface ProvisionedBusiness {
  business_id: string;
  private_key: string;
  public_key: string;
}

/** A new business with one private key (all permissions) and one public key: what `init` prints. */
export async function provisionBusiness(services: Services, name: string, plan: Plan): Promise<ProvisionedBusiness> {
  const businessId = await services.commands.businesses.create(cliContext(services, ''), { name, plan });
  const ctx = cliContext(services, businessId);
  const privateKey = await services.commands.apiKeys.create(ctx, { type: 'private', name: 'default private key', permissions: null });
  const publicKey = await services.commands.apiKeys.create(ctx, { type: 'public', name: 'default public key', permissions: null });
  return { business_id: businessId, private_key: privateKey.key, public_key: publicKey.key };
}

/**
 * `loyalty businesses set-plan`: moves a business to `plan`, counting its customers from the read
 * models (caught up first by the CLI); false when it is on that plan already.
 */
export async function setBusinessPlan(services: Services, businessId: string, plan: Plan): Promise<{ changed: boolean; customers: number }> {
  const customers = await services.queries.customers.count(businessId);
  const ctx = cliContext(services, businessId);
  const changed = await services.commands.businesses.setPlan(ctx, { plan, customerCount: customers });
  return { changed, customers };
}

export function describeKeys(p: ProvisionedBusiness, heading: string): string {
  return [
    heading,
    `  business:    ${p.business_id}`,
    `  private key: ${p.private_key}   (server-side only: full access)`,
    `  public key:  ${p.public_key}   (read-only, safe in browsers)`,
    'These keys are shown once and cannot be shown again. Store them now.',
  ].join('\n');
}

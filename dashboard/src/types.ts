import type { components } from '../../client/src/generated/api.js';

/** The API's resources as the OpenAPI document describes them: the types the typed client is generated with. */
type Schemas = components['schemas'];

export type Customer = Schemas['Customer'];
export type Transaction = Schemas['PointsTransaction'];
export type Lot = Schemas['Lot'];
export type Reward = Schemas['Reward'];
export type Redemption = Schemas['Redemption'];
export type Tier = Schemas['Tier'];
export type EventType = Schemas['EventType'];
export type StreamEvent = Schemas['StreamEvent'];
export type Webhook = Schemas['Webhook'];
export type Delivery = Schemas['WebhookDelivery'];
export type ApiKey = Schemas['ApiKey'];
export type ProgramSettings = Schemas['ProgramSettings'];
export type Stats = Schemas['Stats'];
export type Me = Schemas['Me'];

export const customerName = (c: Pick<Customer, 'first_name' | 'last_name' | 'email' | 'phone' | 'id'>): string =>
  [c.first_name, c.last_name].filter(Boolean).join(' ') || c.email || c.phone || c.id;

/** The document's tags, in reading order, each with what its operations are for. */
export const TAGS = [
  { name: 'Customers', description: 'The people who collect points: profile, balance, lifetime totals, tier, summary, ledger and raw event stream.' },
  { name: 'Points', description: 'Earn, deduct and adjust points. A `reference` makes a transaction unique per customer, forever; an `Idempotency-Key` makes a retry safe.' },
  { name: 'Events', description: 'Record what a customer did (a purchase, a review…); the event type’s rules decide the points.' },
  { name: 'Event types', description: 'The kinds of events a business records, and the rules that turn their properties into points.' },
  { name: 'Rewards', description: 'What customers can redeem points for, with optional stock.' },
  { name: 'Redemptions', description: 'Redeem a reward for a customer, list redemptions, cancel one (points and stock go back).' },
  { name: 'Tiers', description: 'Levels reached by lifetime points; each has a multiplier applied to earns that ask for it.' },
  { name: 'Program', description: 'The points lifecycle policy: expiry, pending days, expiring notices, lifetime or rolling tier qualification.' },
  { name: 'Webhooks', description: 'Endpoints that receive signed messages (Standard Webhooks) when things happen; the messages themselves are under `webhooks`.' },
  { name: 'API keys', description: 'Private keys (server-side, per-permission) and public keys (browsers, read-only); a key is shown once, at creation.' },
];

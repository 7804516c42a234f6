/** The API's resources as the dashboard reads them (the OpenAPI document at /api/v1/openapi.json has every field). */
export interface Customer {
  id: string;
  email: string | null;
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  external_reference: string | null;
  metadata: Record<string, unknown>;
  points_balance: number;
  lifetime_earned: number;
  lifetime_redeemed: number;
  points_pending?: number;
  next_expiring?: { amount: number; expires_at: string } | null;
  tier: { id: string; name: string; multiplier: number; achieved_at: string } | null;
  created_at: string;
  updated_at: string;
}

export interface Transaction {
  id: string;
  type: string;
  amount: number;
  balance: number;
  description: string | null;
  reference: string | null;
  created_at: string;
}

export interface Reward {
  id: string;
  title: string;
  points_cost: number;
  reward_type: string;
  description: string | null;
  stock_quantity: number | null;
  active: boolean;
  redeemed_count: number;
  created_at: string;
}

export interface Redemption {
  id: string;
  reward_id: string;
  points_cost: number;
  balance: number;
  status: 'completed' | 'cancelled';
  created_at: string;
  cancelled_at: string | null;
}

export interface Tier {
  id: string;
  name: string;
  points_threshold: number;
  multiplier: number;
  benefits: string[];
  created_at: string;
}

export interface EventType {
  id: string;
  name: string;
  display_name: string;
  default_points: number;
  rules: Array<Record<string, unknown>>;
  created_at: string;
}

export interface StreamEvent {
  position: number;
  type: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  recorded_at: string;
}

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  disabled_reason?: string | null;
  created_at: string;
}

export interface Delivery {
  id: string;
  message_id: string;
  event_type: string;
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  message_status: string;
}

export interface ApiKey {
  id: string;
  type: 'private' | 'public';
  name: string | null;
  permissions: string[];
  key_hint: string;
  created_at: string;
  revoked_at: string | null;
}

export const customerName = (c: Pick<Customer, 'first_name' | 'last_name' | 'email' | 'phone' | 'id'>): string =>
  [c.first_name, c.last_name].filter(Boolean).join(' ') || c.email || c.phone || c.id;

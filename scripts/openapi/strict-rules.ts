/**
 * The rules `npm run lint:openapi` adds to Redocly's `recommended-strict`: what a client generator
 * and a reader of the reference need, and what `recommended` does not check.
 */
const always = ['X-Request-Id'];
const budget = ['RateLimit', 'RateLimit-Policy'];

export const STRICT_RULES = {
  'response-contains-header': {
    severity: 'error',
    names: {
      '2XX': [...always, ...budget],
      '400': always,
      '401': always,
      '403': always,
      '404': always,
      '409': always,
      '413': always,
      '415': always,
      '422': always,
      '429': [...always, ...budget, 'Retry-After'],
      '500': always,
      '503': [...always, 'Retry-After'],
    },
  },
  'no-invalid-media-type-examples': { severity: 'error', allowAdditionalProperties: false },
  'no-invalid-schema-examples': 'error',
  'no-invalid-parameter-examples': 'error',
  'operation-description': 'error',
  'parameter-description': 'error',
  'tag-description': 'error',
  'info-license': 'error',
  'info-license-strict': 'error',
  'operation-singular-tag': 'error',
  'operation-tag-defined': 'error',
  'no-required-schema-properties-undefined': 'error',
  'no-enum-type-mismatch': 'error',
  'no-duplicated-enum-values': 'error',
  'component-name-unique': 'error',
  'no-empty-servers': 'error',
} as const;

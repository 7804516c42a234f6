import { ERROR_CODES, ERROR_CODE_NAMES } from '../../src/error-codes.js';

/** docs/errors.md from the error-code catalogue (src/error-codes.ts): every code, by status. */
export function renderErrorsDoc(): string {
  const rows = [...ERROR_CODE_NAMES]
    .sort((a, b) => ERROR_CODES[a].status - ERROR_CODES[b].status)
    .map((code) => `| ${ERROR_CODES[code].status} | \`${code}\` | ${ERROR_CODES[code].when} | ${ERROR_CODES[code].action} |`);
  return `# Error codes

<!-- Generated from src/error-codes.ts by \`npm run docs:generate\`; test/docs/generated-docs.test.ts checks it is fresh. -->

Every error answer is JSON: \`{"code", "message", "request_id"}\`, plus \`details\` for
\`validation_error\` and the extras named below. Branch on \`code\` (stable); \`message\` is for
people and may change. Every answer carries \`X-Request-Id\`: quote it when reporting a problem.

The OpenAPI document (\`GET /api/v1/openapi.json\`) lists, for each operation, exactly the codes it
can answer, as an enum per status, with the extras typed; the client under \`client/\` turns them
into a union (\`LoyaltyApiError\`). Every API route can also answer \`validation_error\`, the three
401 codes, \`insufficient_permissions\`, \`payload_too_large\`, \`rate_limited\`, \`internal_error\` and
\`unavailable\`; every POST, PATCH and DELETE also \`invalid_json\`, \`unsupported_media_type\`,
\`public_key_not_allowed\`, \`conflict\` (retries ran out), \`idempotency_key_in_progress\` and
\`idempotency_key_reused\`. \`not_found\` and \`method_not_allowed\` answer paths and methods that no
operation has, so no operation lists them; \`bad_request\`, \`request_timeout\` and
\`headers_too_large\` answer requests that could not be read as HTTP at all.

Extras: \`validation_error\` has \`details: [{path, message}]\`; \`duplicate_transaction\` the original
under \`transaction\`, \`event\` or \`redemption\`; \`customer_exists\` the holder's \`customer_id\`;
\`insufficient_points\` the \`balance\` met. Answers that invite a retry carry \`Retry-After\`
(seconds): \`rate_limited\`, \`unavailable\`, \`idempotency_key_in_progress\`, and \`conflict\` when a
retry budget ran out (a \`conflict\` over a taken name has none: it is final).

| Status | Code | When | What to do |
|---|---|---|---|
${rows.join('\n')}
`;
}

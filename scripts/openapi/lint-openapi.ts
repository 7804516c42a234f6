import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createConfig, formatProblems, getTotals, lint } from '@redocly/openapi-core';
import { openApiDocument } from './openapi-document.js';
import { STRICT_RULES } from './strict-rules.js';

/**
 * `npm run lint:openapi`: writes the served OpenAPI document to dist/openapi.json and lints it
 * with Redocly's `recommended-strict` rules plus the stricter ones in strict-rules.ts (response
 * headers, example validation, descriptions, a licence). Offline: the document has no external
 * references. Exit 1 on any error or warning.
 */
const file = path.resolve('dist/openapi.json');
mkdirSync(path.dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(await openApiDocument(), null, 2)}\n`);

const config = await createConfig({ extends: ['recommended-strict'], rules: STRICT_RULES });
const problems = await lint({ ref: file, config });
const totals = getTotals(problems);
formatProblems(problems, { totals, format: process.env.LINT_FORMAT === 'summary' ? 'summary' : 'stylish', color: process.stdout.isTTY });
if (totals.errors + totals.warnings > 0) {
  console.error(`${file}: ${totals.errors} errors, ${totals.warnings} warnings`);
  process.exit(1);
}
console.log(`${file}: OpenAPI document is valid (redocly recommended-strict and the rules of strict-rules.ts, no problems)`);

import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderErrorsDoc } from '../../scripts/docs/render-errors-doc.js';
import { withWebhookExamples } from '../../scripts/docs/render-webhook-examples.js';
import { ERROR_CODE_NAMES } from '../../src/error-codes.js';
import { WEBHOOK_EVENT_TYPES } from '../../src/events/webhook-events.js';

const doc = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

describe('generated catalogues in docs/ (regenerate with npm run docs:generate if these fail)', () => {
  it('docs/errors.md is what the error-code catalogue generates, a row per code', () => {
    const committed = doc('errors.md');
    expect(committed).toBe(renderErrorsDoc());
    for (const code of ERROR_CODE_NAMES) expect(committed).toContain(`| \`${code}\` |`);
  });

  it('docs/webhooks.md has the generated example of every webhook event type', () => {
    const committed = doc('webhooks.md');
    expect(committed).toBe(withWebhookExamples(committed));
    for (const type of WEBHOOK_EVENT_TYPES) expect(committed).toContain(`"type": "${type}"`);
  });

  it('docs/index.md links every document in docs/, and the README links nothing outside the repository', () => {
    const index = doc('index.md');
    const documents = readdirSync(new URL('../../docs/', import.meta.url)).filter((name) => name.endsWith('.md') && name !== 'index.md');
    expect(documents.length).toBeGreaterThan(5);
    for (const name of documents) expect(index, name).toContain(`](${name})`);
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('](docs/index.md)');
    expect(readme).not.toMatch(/\]\(\.\.\//);
  });
});

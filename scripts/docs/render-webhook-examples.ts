import { WEBHOOK_EVENT_TYPES } from '../../src/events/webhook-events.js';
import { WEBHOOK_DATA_EXAMPLES, WEBHOOK_DATA_SCHEMAS, WEBHOOK_DESCRIPTIONS } from '../../src/webhooks/webhook-payload-schemas.js';

export const BEGIN = '<!-- generated:webhook-events (npm run docs:generate, from src/webhooks/webhook-payload-schemas.ts) -->';
export const END = '<!-- /generated:webhook-events -->';

/** The "Event types" section of docs/webhooks.md: one example body per event type, and its fields. */
export function renderWebhookExamples(): string {
  const sections = WEBHOOK_EVENT_TYPES.map((type) => {
    const body = { type, timestamp: '2026-11-22T14:03:07.123Z', data: WEBHOOK_DATA_EXAMPLES[type] };
    const fields = Object.keys(WEBHOOK_DATA_SCHEMAS[type].shape).map((name) => `\`${name}\``).join(', ');
    return `### \`${type}\`

${WEBHOOK_DESCRIPTIONS[type]} \`data\` fields: ${fields}.

\`\`\`json
${JSON.stringify(body, null, 2)}
\`\`\``;
  });
  return `${BEGIN}\n\n${sections.join('\n\n')}\n\n${END}`;
}

/** docs/webhooks.md with its generated section replaced by `renderWebhookExamples()`. */
export function withWebhookExamples(doc: string): string {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error('docs/webhooks.md has no generated:webhook-events section');
  return doc.slice(0, start) + renderWebhookExamples() + doc.slice(end + END.length);
}

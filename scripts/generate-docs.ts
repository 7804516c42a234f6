import { readFileSync, writeFileSync } from 'node:fs';
import { renderErrorsDoc } from './docs/render-errors-doc.js';
import { withWebhookExamples } from './docs/render-webhook-examples.js';
import { renderEventsDoc } from './events-doc/render-events-doc.js';
import { openApiDocument } from './openapi/openapi-document.js';
import { POSTMAN_COLLECTION_FILE, postmanCollection } from './openapi/postman-collection.js';

/** `npm run docs:generate`: every generated catalogue in docs/, from its one source. */
const doc = (name: string) => new URL(`../docs/${name}`, import.meta.url);
writeFileSync(doc('events.md'), renderEventsDoc());
writeFileSync(doc('errors.md'), renderErrorsDoc());
writeFileSync(doc('webhooks.md'), withWebhookExamples(readFileSync(doc('webhooks.md'), 'utf8')));
writeFileSync(POSTMAN_COLLECTION_FILE, postmanCollection(await openApiDocument()));
console.log(`wrote docs/events.md, docs/errors.md, docs/webhooks.md (event types section), ${POSTMAN_COLLECTION_FILE}`);

import { writeFileSync } from 'node:fs';
import { renderEventsDoc } from './events-doc/render-events-doc.js';

/** `npm run docs:events`: regenerates docs/events.md from the event catalogue. */
const file = new URL('../docs/events.md', import.meta.url);
writeFileSync(file, renderEventsDoc());
console.log(`wrote ${file.pathname}`);

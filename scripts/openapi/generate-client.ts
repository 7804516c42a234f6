import { writeFileSync } from 'node:fs';
import { CLIENT_TYPES_FILE, clientTypes } from './client-types.js';
import { openApiDocument } from './openapi-document.js';

/** `npm run client:generate`: rewrites the client's generated types from the served document. */
writeFileSync(CLIENT_TYPES_FILE, await clientTypes(await openApiDocument()));
console.log(`wrote ${CLIENT_TYPES_FILE}`);

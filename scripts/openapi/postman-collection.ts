/**
 * A Postman collection (v2.1, which Bruno and Insomnia import too) generated from the OpenAPI
 * document: a folder per tag, a request per operation with its summary and description, path
 * variables and query parameters (off until ticked) with their examples, the body's example,
 * a fresh Idempotency-Key on every write, and the key sent as X-API-Key from `{{apiKey}}`.
 * `npm run docs:generate` writes it to docs/; test/client/generated-fresh.test.ts checks it fresh.
 */
export const POSTMAN_COLLECTION_FILE = 'docs/loyalty.postman_collection.json';

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  description?: string;
  schema?: { example?: unknown; default?: unknown };
  example?: unknown;
}
interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<Parameter | { $ref: string }>;
  requestBody?: { content: Record<string, { schema: { $ref?: string; example?: unknown }; example?: unknown }> };
}
interface Document {
  info: { title: string; description?: string; version: string };
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas?: Record<string, { example?: unknown }>; parameters?: Record<string, Parameter> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const resolve = <T>(document: Document, item: T | { $ref: string }): T => {
  if (typeof item === 'object' && item !== null && '$ref' in item) {
    const [, , section, name] = item.$ref.split('/');
    return (document.components as Record<string, Record<string, T>>)[section!]![name!]!;
  }
  return item as T;
};

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function request(document: Document, path: string, method: string, operation: Operation) {
  const parameters = (operation.parameters ?? []).map((p) => resolve<Parameter>(document, p));
  const exampleOf = (p: Parameter) => p.example ?? p.schema?.example ?? p.schema?.default;
  const writes = method !== 'get';
  const body = operation.requestBody?.content['application/json'];
  const example = body ? (body.example ?? resolve<{ example?: unknown }>(document, body.schema).example ?? {}) : undefined;
  const segments = path.replace(/^\//, '').split('/').map((s) => s.replace(/^\{(.+)\}$/, ':$1'));
  const query = parameters.filter((p) => p.in === 'query');
  return {
    name: operation.summary ?? operation.operationId,
    request: {
      method: method.toUpperCase(),
      ...(operation.description ? { description: operation.description } : {}),
      header: [
        ...(body ? [{ key: 'Content-Type', value: 'application/json' }] : []),
        // One key per send: resend the same request (same key) to see a replay.
        ...(writes && parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key')
          ? [{ key: 'Idempotency-Key', value: '{{$guid}}', description: 'Retries of one operation reuse one key (see the contract).' }]
          : []),
      ],
      url: {
        raw: `{{baseUrl}}/${segments.join('/')}`,
        host: ['{{baseUrl}}'],
        path: segments,
        ...(query.length
          ? { query: query.map((p) => ({ key: p.name, value: exampleOf(p) === undefined ? '' : text(exampleOf(p)), disabled: true, ...(p.description ? { description: p.description } : {}) })) }
          : {}),
        ...(parameters.some((p) => p.in === 'path')
          ? {
              variable: parameters
                .filter((p) => p.in === 'path')
                .map((p) => ({ key: p.name, value: text(exampleOf(p) ?? ''), ...(p.description ? { description: p.description } : {}) })),
            }
          : {}),
      },
      ...(body ? { body: { mode: 'raw', raw: JSON.stringify(example, null, 2), options: { raw: { language: 'json' } } } } : {}),
    },
  };
}

/** The collection of `document` (the service's OpenAPI document), as JSON text with a final newline. */
export function postmanCollection(document: unknown): string {
  const doc = document as Document;
  const folders = new Map<string, { name: string; description?: string; item: unknown[] }>();
  for (const tag of doc.tags ?? []) folders.set(tag.name, { name: tag.name, ...(tag.description ? { description: tag.description } : {}), item: [] });
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const operation = operations[method];
      if (!operation) continue;
      const tag = operation.tags?.[0] ?? 'Other';
      if (!folders.has(tag)) folders.set(tag, { name: tag, item: [] });
      folders.get(tag)!.item.push(request(doc, path, method, operation));
    }
  }
  const collection = {
    info: {
      name: doc.info.title,
      description: `${doc.info.description ?? ''}\n\nGenerated from the OpenAPI document (version ${doc.info.version}) by \`npm run docs:generate\`. Set \`baseUrl\` and \`apiKey\` (a private key, \`sk_live_…\`) in the collection's variables.`.trim(),
      schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json',
    },
    auth: {
      type: 'apikey',
      apikey: [
        { key: 'key', value: 'X-API-Key', type: 'string' },
        { key: 'value', value: '{{apiKey}}', type: 'string' },
        { key: 'in', value: 'header', type: 'string' },
      ],
    },
    variable: [
      // The document's `servers` is the host it was asked from; the collection names the default.
      { key: 'baseUrl', value: 'http://localhost:3000' },
      { key: 'apiKey', value: '' },
    ],
    item: [...folders.values()].filter((folder) => folder.item.length > 0),
  };
  return `${JSON.stringify(collection, null, 2)}\n`;
}

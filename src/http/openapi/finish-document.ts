import { PARAMETER_DESCRIPTIONS, SCHEMA_EXAMPLES } from './examples.js';

interface Parameter {
  name?: string;
  description?: string;
}
interface Document {
  paths?: Record<string, Record<string, { parameters?: Parameter[] }>>;
  components?: { schemas?: Record<string, { example?: unknown }> };
}

/**
 * The generated document with what the zod schemas do not carry: an example for each schema that
 * has one in SCHEMA_EXAMPLES, and a description for each parameter named in PARAMETER_DESCRIPTIONS
 * that lacks one. Only fills gaps: what a schema says itself wins.
 */
export function finishDocument<T extends object>(document: T): T {
  const doc = document as Document;
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
    if (schema.example === undefined && SCHEMA_EXAMPLES[name] !== undefined) schema.example = SCHEMA_EXAMPLES[name];
  }
  for (const item of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.description === undefined && parameter.name && PARAMETER_DESCRIPTIONS[parameter.name]) {
          parameter.description = PARAMETER_DESCRIPTIONS[parameter.name];
        }
      }
    }
  }
  return document;
}

import openapiTS, { astToString } from 'openapi-typescript';

export const CLIENT_TYPES_FILE = 'client/src/generated/api.ts';

const HEADER = `/**
 * Generated from the service's OpenAPI document by \`npm run client:generate\`
 * (openapi-typescript); do not edit. test/client/generated-fresh.test.ts fails when it is stale.
 */
`;

/** The TypeScript types of an OpenAPI document, as the client's generated file holds them. */
export async function clientTypes(document: unknown): Promise<string> {
  const ast = await openapiTS(document as Parameters<typeof openapiTS>[0], { exportType: true, alphabetize: false });
  return HEADER + astToString(ast);
}

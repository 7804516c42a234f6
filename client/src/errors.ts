import type { components } from './generated/api.js';

type Schemas = components['schemas'];
type ErrorSchemaName = { [K in keyof Schemas]: K extends `${string}Error` ? K : never }[keyof Schemas];

/** Every error body the API documents: a union told apart by `code`, each with its typed extras. */
export type ErrorBody = Schemas[ErrorSchemaName];
/** Every error code an operation of the API can answer. */
export type ErrorCode = ErrorBody['code'];
/** The error body of one code: `ErrorOf<'insufficient_points'>['balance']` is a number. */
export type ErrorOf<C extends ErrorCode> = Extract<ErrorBody, { code: C }>;

/**
 * An error answer of the API, thrown by `unwrap`. `body` is typed by the operation that answered:
 * narrow on `body.code` to reach the extras (`balance`, `customer_id`, `transaction`…).
 */
export class LoyaltyApiError<Body extends ErrorBody = ErrorBody> extends Error {
  constructor(
    readonly status: number,
    readonly body: Body,
    readonly response: Response,
  ) {
    super(`${status} ${body.code}: ${body.message} (request ${body.request_id})`);
    this.name = 'LoyaltyApiError';
  }

  get code(): Body['code'] {
    return this.body.code;
  }
}

/** What an openapi-fetch call resolves to. */
interface FetchResult<Data, Error> {
  data?: Data;
  error?: Error;
  response: Response;
}

/**
 * The data of a successful call, or a `LoyaltyApiError` thrown with the operation's own error
 * union: `const customer = await unwrap(api.GET('/api/v1/customers/{customer_id}', …))`.
 */
export async function unwrap<Data, Error extends ErrorBody>(call: Promise<FetchResult<Data, Error>>): Promise<Data> {
  const { data, error, response } = await call;
  if (error !== undefined) throw new LoyaltyApiError<Error>(response.status, error, response);
  return data as Data;
}

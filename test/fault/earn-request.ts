/** One earn request's outcome as the client saw it. */
export interface EarnAnswer {
  /** HTTP status, or null when the connection failed (no answer at all). */
  status: number | null;
  /** The error code of a JSON error answer. */
  code: string | undefined;
  /** The transaction id of a 201. */
  transactionId: string | undefined;
  retryAfterSeconds: number | undefined;
  ms: number;
  error?: string;
}

/** POST …/points/transaction {"type":"earn"} under an Idempotency-Key, timed. Never throws. */
export async function earn(baseUrl: string, apiKey: string, customerId: string, idempotencyKey: string, amount = 1): Promise<EarnAnswer> {
  const started = performance.now();
  try {
    const response = await fetch(`${baseUrl}/api/v1/customers/${customerId}/points/transaction`, {
      method: 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ type: 'earn', amount }),
    });
    const text = await response.text();
    const body = text ? JSON.parse(text) : {};
    const retryAfter = response.headers.get('retry-after');
    return {
      status: response.status,
      code: body.code,
      transactionId: response.status === 201 ? body.id : undefined,
      retryAfterSeconds: retryAfter === null ? undefined : Number(retryAfter),
      ms: performance.now() - started,
    };
  } catch (error) {
    return { status: null, code: undefined, transactionId: undefined, retryAfterSeconds: undefined, ms: performance.now() - started, error: String(error) };
  }
}

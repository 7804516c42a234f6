const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock detected

/** Runs `work` again (a few times, with jitter) when PostgreSQL aborts it as a serialization failure or deadlock. */
export async function retryOnSerializationFailure<T>(work: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= attempts || !code || !RETRYABLE.has(code)) throw error;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
    }
  }
}

import type { Services } from '../services.js';
import type { CliIo } from './cli-io.js';

/** What program.ts lends to the command groups registered from their own files. */
export interface CliKit {
  /** Opens the store for one command and closes it; `catchUp: false` leaves the read models as they are. */
  withServices<T>(work: (services: Services) => Promise<T>, options?: { catchUp?: boolean }): Promise<T>;
  /** An error whose message is printed as is, with exit code 1. */
  fail(message: string): Error;
  /** Where the command writes its output and sets its exit code. */
  io: CliIo;
}

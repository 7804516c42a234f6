import pino, { type DestinationStream } from 'pino';

/**
 * Where one run of the program reads its settings and writes: the process's own (src/cli.ts), or
 * a caller's, which runs a command in its own process and captures what it printed (the tests).
 */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** The exit code of a command that ran but found a problem (`audit verify`), or of a failure. */
  setExitCode(code: number): void;
  /** Where the logs go (they never go to stdout, which scripts parse); without it, to `stderr`. */
  logDestination?(): DestinationStream;
}

/** The process's own: its environment, its stdout, stderr (the logs through pino's own writer on fd 2) and exit code. */
export function processIo(): CliIo {
  return {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    setExitCode: (code) => void (process.exitCode = code),
    logDestination: () => pino.destination(2),
  };
}

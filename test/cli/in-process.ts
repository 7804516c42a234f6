import { Writable } from 'node:stream';
import { runCli } from '../../src/cli/run-cli.js';
import { childEnv, type CliResult, type ProcessStore } from '../e2e/process-helpers.js';

/** A stream that keeps everything written to it. */
class Captured extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/**
 * Runs `loyalty ARGS…` on the store in this process: the program's own code (src/cli/run-cli.ts,
 * what the binary runs), with the environment a child would get, its stdout, stderr and exit code
 * captured. A process costs about 2 s of CPU to boot and open the embedded store; this, about a
 * quarter. For tests about what a command does and prints; what only a process shows (the built
 * binary, `serve`, a second process on the embedded store, signals) is tested with `runCli` from
 * test/e2e/process-helpers.ts.
 */
export async function runInProcess(args: string[], store: ProcessStore): Promise<CliResult> {
  const stdout = new Captured();
  const stderr = new Captured();
  let code = 0;
  await runCli(args, { env: childEnv(store.env), stdout, stderr, setExitCode: (exit) => void (code = exit) });
  return { code, signal: null, stdout: stdout.text, stderr: stderr.text };
}

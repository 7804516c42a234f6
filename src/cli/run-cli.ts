import { type Command, CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { DataDirLocked } from '../db/data-dir-lock.js';
import { DatabaseUnreachable } from '../db/database.js';
import { ApiError } from '../errors.js';
import type { CliIo } from './cli-io.js';
import { buildProgram, CliError } from './program.js';

function allCommands(command: Command): Command[] {
  return [command, ...command.commands.flatMap(allCommands)];
}

/**
 * Runs `loyalty ARGS…` (the arguments after the program's name) with `io`: what src/cli.ts does
 * with the process's own, and what a test does in its process, capturing the output. Commander
 * reports a usage error, --help and --version through an exception here instead of
 * `process.exit`, so the caller's process lives on; the output and exit code are the same.
 * `serve` runs in the calling process too (its signals, its exit): tests start it as a process.
 */
export async function runCli(args: string[], io: CliIo): Promise<void> {
  const program = buildProgram(io);
  for (const command of allCommands(program)) command.exitOverride();
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander printed what was wrong already (or the help, or the version).
      if (error.exitCode !== 0) io.setExitCode(error.exitCode);
      return;
    }
    // What a person can act on is one line; anything else is a bug, shown with its stack.
    const expected = error instanceof CliError || error instanceof DataDirLocked || error instanceof DatabaseUnreachable || error instanceof ApiError;
    if (error instanceof ConfigError) {
      io.stderr.write(`loyalty: ${error.message}\n`);
      io.setExitCode(2);
    } else {
      io.stderr.write(`loyalty: ${expected ? error.message : ((error as Error).stack ?? String(error))}\n`);
      io.setExitCode(1);
    }
  }
}

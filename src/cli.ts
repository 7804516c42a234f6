#!/usr/bin/env node
import { buildProgram, CliError } from './cli/program.js';
import { ConfigError } from './config.js';
import { DataDirLocked } from './db/data-dir-lock.js';
import { DatabaseUnreachable } from './db/database.js';
import { ApiError } from './errors.js';

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  // What a person can act on is one line; anything else is a bug, shown with its stack.
  const expected = error instanceof CliError || error instanceof DataDirLocked || error instanceof DatabaseUnreachable || error instanceof ApiError;
  if (error instanceof ConfigError) {
    process.stderr.write(`loyalty: ${error.message}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`loyalty: ${expected ? error.message : ((error as Error).stack ?? String(error))}\n`);
    process.exitCode = 1;
  }
}

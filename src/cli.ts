#!/usr/bin/env node
import { buildProgram, CliError } from './cli/program.js';
import { DataDirLocked } from './db/data-dir-lock.js';

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CliError || error instanceof DataDirLocked) {
    process.stderr.write(`loyalty: ${error.message}\n`);
  } else {
    process.stderr.write(`loyalty: ${(error as Error).stack ?? String(error)}\n`);
  }
  process.exitCode = 1;
}

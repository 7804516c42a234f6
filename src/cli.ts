#!/usr/bin/env node
import { processIo } from './cli/cli-io.js';
import { runCli } from './cli/run-cli.js';

await runCli(process.argv.slice(2), processIo());

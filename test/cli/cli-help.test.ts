import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { textTable } from '../../src/cli/text-table.js';
import { PROJECTORS } from '../../src/projectors.js';

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((sub) => [sub, ...allCommands(sub)]);
}

/** What the program prints for `args`, without running any command's action. */
function output(args: string[]): string {
  let text = '';
  const program = buildProgram().exitOverride();
  for (const command of [program, ...allCommands(program)]) {
    command.exitOverride().configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  }
  try {
    program.parse(args, { from: 'user' });
  } catch {
    // commander ends --version and --help by "exiting", which exitOverride turns into a throw
  }
  return text;
}

describe('the loyalty command line describes itself', () => {
  it('prints the package version for --version', () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(output(['--version']).trim()).toBe(version);
  });

  it('gives every command and subcommand a description', () => {
    for (const command of allCommands(buildProgram())) expect(command.description(), command.name()).not.toBe('');
  });

  it('names the projectors rebuild takes in its help', () => {
    const help = output(['projections', 'rebuild', '--help']);
    for (const projector of PROJECTORS.filter((p) => !p.reactor)) expect(help).toContain(projector.name);
  });

  it('prints lists as aligned columns under a header row', () => {
    const text = textTable(
      [
        { id: 'key_1', type: 'private', permissions: ['points:read', 'points:write'], name: null },
        { id: 'key_22', type: 'public', permissions: ['points:read'], name: 'web' },
      ],
      { id: 'ID', type: 'TYPE', permissions: 'PERMISSIONS', name: 'NAME' },
      'No keys.',
    );
    expect(text.split('\n')).toEqual([
      'ID      TYPE     PERMISSIONS               NAME',
      'key_1   private  points:read,points:write  -',
      'key_22  public   points:read               web',
    ]);
    expect(textTable([] as Array<{ id: string }>, { id: 'ID' }, 'No keys.')).toBe('No keys.');
  });
});

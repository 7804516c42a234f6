/** Thrown for a command that cannot run; the message is printed and the exit code is 1. */
export class CliError extends Error {}

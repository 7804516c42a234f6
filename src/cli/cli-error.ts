/** Thrown for a command that cannot run; the message is printed and the exit code is 1. */
export class CliError extends Error {}

/** Why `serve` cannot listen on `host:port`, as one line a person can act on. */
export function cannotListen(error: NodeJS.ErrnoException, host: string, port: number): CliError {
  const where = `${host}:${port}`;
  if (error.code === 'EADDRINUSE') return new CliError(`Cannot listen on ${where}: another process is listening there. Stop it, or set PORT to a free port.`);
  if (error.code === 'EACCES') return new CliError(`Cannot listen on ${where}: this user may not open that port. Set PORT to 1024 or above.`);
  if (error.code === 'EADDRNOTAVAIL') return new CliError(`Cannot listen on ${where}: no network interface of this machine has that address. Check HOST.`);
  return new CliError(`Cannot listen on ${where}: ${error.message}`);
}

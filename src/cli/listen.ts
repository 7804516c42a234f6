import type { Server } from 'node:net';
import { CliError } from './cli-error.js';

/**
 * Listens on `host:port`; if it cannot (the port is taken, say), rejects with what to do about it,
 * one line a person can act on (`run-cli.ts` prints it, exit code 1).
 */
export async function listenOrSayWhy(server: Server, port: number, host: string): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    throw cannotListen(error as NodeJS.ErrnoException, host, port);
  }
}

function cannotListen(error: NodeJS.ErrnoException, host: string, port: number): CliError {
  const where = `${host}:${port}`;
  if (error.code === 'EADDRINUSE') return new CliError(`Cannot listen on ${where}: another process is listening there. Stop it, or set PORT to a free port.`);
  if (error.code === 'EACCES') return new CliError(`Cannot listen on ${where}: this user may not open that port. Set PORT to 1024 or above.`);
  if (error.code === 'EADDRNOTAVAIL') return new CliError(`Cannot listen on ${where}: no network interface of this machine has that address. Check HOST.`);
  return new CliError(`Cannot listen on ${where}: ${error.message}`);
}

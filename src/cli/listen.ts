import type { Server } from 'node:net';
import { CliError } from './cli-error.js';

/**
 * How many connections the kernel holds for the server to accept: node's default is 511. A burst
 * of new connections while the process is busy (1,000 clients connecting at once) overflowed that,
 * and each connection dropped waited for its client to try again, 1 s and then 3 s later
 * (docs/performance.md). The kernel caps it at `net.core.somaxconn` (4096 on current Linux).
 */
export const LISTEN_BACKLOG = 4096;

/**
 * Listens on `host:port`; if it cannot (the port is taken, say), rejects with what to do about it,
 * one line a person can act on (`run-cli.ts` prints it, exit code 1).
 */
export async function listenOrSayWhy(server: Server, port: number, host: string): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, LISTEN_BACKLOG, () => {
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

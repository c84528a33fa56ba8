// Binding an HTTP server as a value-returning step: a bind failure (port in use, address not on this host) is an
// outcome the caller decides about (retry, report, give up), never an exception or an 'error' event left unhandled.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { formatHostPort } from './bind-address.js';

export interface ListenError {
  /** "host:port" we tried. */
  readonly address: string;
  /** errno code when there is one (EADDRINUSE, EADDRNOTAVAIL, EACCES). */
  readonly code: string;
  readonly message: string;
}

export type ListenResult =
  { readonly ok: true; readonly address: AddressInfo } | { readonly ok: false; readonly error: ListenError };

export function listen(server: Server, host: string, port: number): Promise<ListenResult> {
  return new Promise((resolve) => {
    const onError = (e: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      resolve({
        ok: false,
        error: { address: formatHostPort(host, port), code: e.code ?? 'UNKNOWN', message: e.message },
      });
    };
    const onListening = () => {
      server.off('error', onError);
      const address = server.address();
      if (address !== null && typeof address === 'object') resolve({ ok: true, address });
      else
        resolve({
          ok: false,
          error: { address: formatHostPort(host, port), code: 'ENOTINET', message: 'not an IP socket' },
        });
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host, port, exclusive: true });
  });
}

/** Closes a server and every connection it holds (keep-alive clients must not hold a port open after a move). */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

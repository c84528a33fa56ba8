// koffi (the FFI module), typed as far as this code uses it: libnftables.ts calls nft's library through it, and
// netlink/socket.ts libc's socket calls. koffi is an optional dependency, so it is required when first wanted.
import { createRequire } from 'node:module';
import { errorMessage } from '../../util/error-message.js';

type Callback<T> = (err: unknown, result: T) => void;

/** A C function as koffi gives it: callable, and `.async` on a worker thread with a node-style callback. */
export interface CFunction<A extends unknown[], R> {
  (...args: A): R;
  async(...args: [...A, Callback<R>]): void;
}

/** A shared library koffi has loaded. */
export interface CLibrary {
  func(definition: string): unknown;
}

export interface KoffiModule {
  load(path: string): CLibrary;
  config(): Record<string, number>;
  config(cfg: Record<string, number>): Record<string, number>;
  /** errno as the last C call on this thread left it. */
  errno(): number;
}

/** koffi, or why it did not load (no build for this platform, not installed). Never throws. */
export function loadKoffi(): KoffiModule | { error: string } {
  try {
    return createRequire(import.meta.url)('koffi') as KoffiModule;
  } catch (e) {
    return { error: `koffi (the FFI module) did not load: ${errorMessage(e)}` };
  }
}

/** The C function `definition` declares ("int close(int fd)"), from `lib`. */
export function cFunction<A extends unknown[], R>(lib: CLibrary, definition: string): CFunction<A, R> {
  return lib.func(definition) as CFunction<A, R>;
}

/** Calls `f` on a koffi worker thread. */
export function callAsync<A extends unknown[], R>(f: CFunction<A, R>, ...args: A): Promise<R> {
  return new Promise((resolve, reject) => {
    f.async(...args, (err: unknown, result: R) => (err ? reject(err) : resolve(result)));
  });
}

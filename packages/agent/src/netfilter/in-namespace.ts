// Runs a synchronous function with this thread inside another network namespace, then back: for sockets that must
// live in a namespace the process is not in (a netlink socket belongs, for its whole life, to the namespace its
// creator was in). The agent never needs it (it runs in its node's namespace); the test harness, which programs
// several node namespaces from one process, does. setns(2) changes only the calling thread, and `fn` runs to its
// end on it before anything else can, so nothing else of this process ever sees the other namespace.
import { closeSync, openSync } from 'node:fs';
import { cFunction, loadKoffi } from './nft/koffi.js';
import type { CFunction } from './nft/koffi.js';

const CLONE_NEWNET = 0x40000000;

let setns: CFunction<[number, number], number> | { error: string } | undefined;

function setnsFunction(): CFunction<[number, number], number> | { error: string } {
  if (setns !== undefined) return setns;
  const koffi = loadKoffi();
  if ('error' in koffi) return (setns = koffi);
  try {
    return (setns = cFunction(koffi.load('libc.so.6'), 'int setns(int fd, int nstype)'));
  } catch (e) {
    return (setns = { error: `setns from libc.so.6: ${String(e)}` });
  }
}

/**
 * `fn()` with this thread in the network namespace at `path` (e.g. /run/netns/NAME). Throws when the namespace
 * cannot be entered, or when the thread cannot return to its own (then nothing else is safe on it).
 */
export function inNetworkNamespace<T>(path: string, fn: () => T): T {
  const call = setnsFunction();
  if ('error' in call) throw new Error(call.error);
  const home = openSync('/proc/thread-self/ns/net', 'r');
  try {
    const target = openSync(path, 'r');
    try {
      if (call(target, CLONE_NEWNET) !== 0) throw new Error(`setns into ${path} failed`);
    } finally {
      closeSync(target);
    }
    let result: { value: T } | { error: unknown };
    try {
      result = { value: fn() };
    } catch (error) {
      result = { error };
    }
    if (call(home, CLONE_NEWNET) !== 0)
      throw new Error(`setns back from ${path} failed: this thread is left in another namespace`);
    if ('error' in result) throw result.error;
    return result.value;
  } finally {
    closeSync(home);
  }
}

// Reading and setting one integer sysctl (or /sys module parameter), as kube-proxy does at start: the value is
// written only when it differs (or, raise-only, when it is lower), so a node already tuned sees no write. The root
// is injectable so tests work on a temporary tree.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../util/error-message.js';

/** net.ipv4.conf.all.route_localnet (per network namespace): lets 127.0.0.0/8 be routed, for localhost NodePorts. */
export const ROUTE_LOCALNET = 'proc/sys/net/ipv4/conf/all/route_localnet';

export type SysctlOutcome =
  | { readonly kind: 'unchanged'; readonly path: string; readonly value: number }
  | {
      readonly kind: 'written';
      readonly path: string;
      readonly from: number | undefined;
      readonly to: number;
    }
  | { readonly kind: 'failed'; readonly path: string; readonly problem: string };

/** Sets `path` (relative to `root`, e.g. "proc/sys/net/ipv4/conf/all/route_localnet") to `to`. Never throws. */
export async function ensureSysctl(
  path: string,
  to: number,
  options: { readonly root?: string; readonly raiseOnly?: boolean } = {},
): Promise<SysctlOutcome> {
  const file = join(options.root ?? '/', path);
  let current: number | undefined;
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (!/^\d+$/.test(text))
      return {
        kind: 'failed',
        path,
        problem: `${path}: unexpected content ${JSON.stringify(text.slice(0, 40))}`,
      };
    current = Number(text);
  } catch (e) {
    return {
      kind: 'failed',
      path,
      problem: `${path}: cannot read: ${errorMessage(e)}`,
    };
  }
  if (current === to || (options.raiseOnly === true && current > to))
    return { kind: 'unchanged', path, value: current };
  try {
    await writeFile(file, `${to}\n`);
    return { kind: 'written', path, from: current, to };
  } catch (e) {
    // /sys is often read-only in containers; upstream reports that and carries on.
    return {
      kind: 'failed',
      path,
      problem: `${path}: cannot write ${to}: ${errorMessage(e)}`,
    };
  }
}

// What a process "on a node" sees of the node as a host: its own xtables lock file, and which iptables back end
// the plain names (`iptables`, `iptables-restore`, …) run. On a real cluster each node is its own machine: a
// legacy iptables writer there waits only for that node's /run/xtables.lock, and the kube-proxy image decides
// between iptables-legacy and iptables-nft. The lab's nodes share one host, so it gives each node a lock file
// under its state directory and, with `lab up --iptables legacy|nft`, a directory whose `iptables*` name that
// back end, first on PATH. The kube-proxy DaemonSet's container and `lab exec NODE` both take it from here, so a
// command typed on a node contends with that node's proxy, as it would on the node itself.
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { LabPaths } from './layout.js';

export const IPTABLES_BACKENDS = ['legacy', 'nft'] as const;
export type IptablesBackendName = (typeof IPTABLES_BACKENDS)[number];

const TOOLS = [
  'iptables',
  'iptables-save',
  'iptables-restore',
  'ip6tables',
  'ip6tables-save',
  'ip6tables-restore',
];
const SYSTEM_DIRS = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];

/** Makes the directory of `iptables*` links to one back end's binaries; an error names what is missing. */
export function prepareIptablesBinDir(paths: LabPaths, backend: IptablesBackendName): string {
  const dir = paths.iptablesBinDir(backend);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  for (const tool of TOOLS) {
    const [base, ...rest] = tool.split('-');
    const real = [base, backend, ...rest].join('-');
    const found = SYSTEM_DIRS.map((d) => join(d, real)).find((p) => existsSync(p));
    if (found === undefined)
      throw new Error(`--iptables ${backend}: ${real} is not installed (Debian's iptables package has it)`);
    const link = join(dir, tool);
    rmSync(link, { force: true });
    symlinkSync(found, link);
  }
  return dir;
}

/**
 * The environment of a process on `node` (a name, or `$(NODE_NAME)` in a pod template): its xtables lock, and
 * PATH with the chosen iptables back end first. `basePath` is the PATH to extend (the lab's own).
 */
export function nodeEnvironment(
  paths: LabPaths,
  node: string,
  iptables: IptablesBackendName | undefined,
  basePath: string,
): Record<string, string> {
  const env: Record<string, string> = { XTABLES_LOCKFILE: paths.nodeXtablesLock(node) };
  if (iptables !== undefined) env.PATH = `${paths.iptablesBinDir(iptables)}:${basePath}`;
  return env;
}

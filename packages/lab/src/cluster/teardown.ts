// Removing everything a lab made, from its records alone: namespaces under its prefix (the processes inside
// them, pod servers, relays and proxies, are killed first, and their links go with them), its /etc/netns
// directories, and its state directory. Used by a lab shutting down, by `lab down` after a crash, and by a new
// `lab up` that finds a dead lab's leftovers.
import { readdirSync, rmSync } from 'node:fs';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { listNamespaces, sweepNamespaces } from '@kube-proxy-ts/netns/index.js';
import { etcNetnsDir } from './layout.js';

export interface TeardownReport {
  readonly namespaces: readonly string[];
  readonly etcDirs: readonly string[];
  readonly errors: readonly string[];
}

function etcLeftovers(prefix: string): string[] {
  try {
    return readdirSync('/etc/netns').filter((n) => n.startsWith(`${prefix}-`));
  } catch {
    return [];
  }
}

export async function removeLabLeftovers(runner: CommandRunner, prefix: string): Promise<TeardownReport> {
  const errors: string[] = [];
  let namespaces: string[] = [];
  // Two rounds: a namespace created while the first sweep ran (a pod starting) is caught by the second.
  for (let round = 0; round < 2; round++) {
    try {
      namespaces = [...namespaces, ...(await sweepNamespaces(runner, `${prefix}-`))];
    } catch (e) {
      errors.push(e instanceof Error ? e.message : String(e));
    }
  }
  const left = (await listNamespaces(runner).catch(() => [] as string[])).filter((n) =>
    n.startsWith(`${prefix}-`),
  );
  for (const n of left) errors.push(`namespace ${n} is still there`);
  const etcDirs = etcLeftovers(prefix);
  for (const d of etcDirs) rmSync(etcNetnsDir(d), { recursive: true, force: true });
  return { namespaces, etcDirs, errors };
}

export function removeStateDir(stateDir: string): void {
  rmSync(stateDir, { recursive: true, force: true });
}

// Network namespaces: create (with loopback up), delete (after stopping what runs inside), list, and sweep
// everything under a prefix. Every name passes checkNamespaceName; nothing here acts on the root namespace.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { killNamespaceProcesses, runChecked } from './exec.js';
import { checkNamespaceName } from './names.js';

/** Creates `name` and brings its loopback up (services answer on 127.0.0.1 inside, and the kernel wants lo up). */
export async function createNamespace(runner: CommandRunner, name: string): Promise<void> {
  checkNamespaceName(name);
  await runChecked(runner, `create namespace ${name}`, 'ip', ['netns', 'add', name]);
  await runChecked(runner, `bring lo up in ${name}`, 'ip', ['-n', name, 'link', 'set', 'lo', 'up']);
}

/** Names of the namespaces `ip netns` knows, in its order. */
export async function listNamespaces(runner: CommandRunner): Promise<string[]> {
  const out = await runChecked(runner, 'list namespaces', 'ip', ['-json', 'netns', 'list']);
  if (out.trim() === '') return []; // iproute2 prints nothing at all when there is no namespace.
  const parsed: unknown = JSON.parse(out);
  if (!Array.isArray(parsed)) return [];
  const names: string[] = [];
  for (const entry of parsed as unknown[]) {
    if (typeof entry === 'object' && entry !== null && 'name' in entry && typeof entry.name === 'string') {
      names.push(entry.name);
    }
  }
  return names;
}

/**
 * Kills every process inside `name`, then deletes it. Processes go first because `ip netns del` only unmounts
 * the name: a server still running inside would keep the namespace, and its links, alive. Missing is fine.
 */
export async function deleteNamespace(runner: CommandRunner, name: string): Promise<void> {
  checkNamespaceName(name);
  if (!(await listNamespaces(runner)).includes(name)) return;
  await killNamespaceProcesses(runner, name, 'KILL');
  await runChecked(runner, `delete namespace ${name}`, 'ip', ['netns', 'del', name]);
}

/**
 * Deletes every namespace whose name starts with `prefix` (a run's own leftovers). Refuses an empty or very short
 * prefix, which could match other people's namespaces. Resolves with the names deleted; keeps going past a
 * failure and rejects at the end with the first error.
 */
export async function sweepNamespaces(runner: CommandRunner, prefix: string): Promise<string[]> {
  if (prefix.length < 6)
    throw new Error(`sweep prefix ${JSON.stringify(prefix)} is too short to be a run's own`);
  const deleted: string[] = [];
  let firstError: unknown;
  for (const name of await listNamespaces(runner)) {
    if (!name.startsWith(prefix)) continue;
    try {
      await deleteNamespace(runner, name);
      deleted.push(name);
    } catch (e) {
      firstError ??= e;
    }
  }
  if (firstError !== undefined) throw firstError;
  return deleted;
}

// For the iptables kernel tests (test/dataplane/iptables-*.test.ts): one network namespace per test, a test-owned
// xtables lock file, a node in 198.18.0.0/15, and a small Service built through the real model.
import { rmSync } from 'node:fs';
import type { IptablesModeOptions } from '../../../packages/agent/src/backends/iptables/backend.js';
import { createNamespace, deleteNamespace, sweepNamespaces } from '../../../packages/netns/src/namespace.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { hostCommandRunner, netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { IptablesVariant } from '../../../packages/agent/src/netfilter/iptables/variant.js';
import { runPrefix } from '../../helpers/kernel.js';

export function modeOptions(variant: IptablesVariant, lockFile: string): IptablesModeOptions {
  return {
    variant,
    lockFile,
    localhostNodePorts: false,
    nfacctCounters: [],
    randomFully: true,
    conntrackTCPBeLiberal: false,
  };
}

export interface Sandbox {
  readonly namespace: string;
  readonly lockFile: string;
  readonly commands: CommandRunner;
}

/** Runs `fn` in a fresh namespace with its own lock file; removes both (and the run's leftovers) afterwards. */
export async function withSandbox(fn: (s: Sandbox) => Promise<void>): Promise<void> {
  const prefix = runPrefix();
  const namespace = `${prefix}-ipt`;
  const lockFile = `/tmp/${prefix}-xtables.lock`;
  await sweepNamespaces(hostCommandRunner, prefix + '-');
  await createNamespace(hostCommandRunner, namespace);
  try {
    await fn({ namespace, lockFile, commands: netnsCommandRunner(namespace) });
  } finally {
    await deleteNamespace(hostCommandRunner, namespace);
    await sweepNamespaces(hostCommandRunner, prefix + '-');
    rmSync(lockFile, { force: true });
  }
}

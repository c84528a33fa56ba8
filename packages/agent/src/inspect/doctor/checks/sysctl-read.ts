// Sysctls as the node's namespace sees them (net.* is per network namespace), read with the sysctl tool through
// the runner so that a test's namespace is read, not the host's.
import type { CommandRunner } from '../../../netfilter/command.js';

export async function readSysctl(runner: CommandRunner, key: string): Promise<string | undefined> {
  const r = await runner.run('sysctl', ['-n', key]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

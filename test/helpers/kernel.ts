// Gate for tests that need the real kernel (root, network namespaces, nft/iptables/ip/conntrack). Without the
// prerequisites such tests skip with a printed reason; with KPTS_REQUIRE_KERNEL=1 (CI) a missing prerequisite is
// a failure, never a skip.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';

const TOOLS = ['ip', 'nft', 'iptables-restore', 'iptables-save', 'conntrack'] as const;
export type KernelTool = (typeof TOOLS)[number];

function missingPrerequisites(tools: readonly string[]): string[] {
  const missing: string[] = [];
  if (typeof process.getuid === 'function' && process.getuid() !== 0) missing.push('root');
  for (const tool of tools) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      missing.push(tool);
    }
  }
  return missing;
}

export const kernelRequired = process.env.KPTS_REQUIRE_KERNEL === '1';

/**
 * Returns a reason to skip when the kernel prerequisites are missing, or undefined when the test may run.
 * Throws when KPTS_REQUIRE_KERNEL=1 and something is missing.
 */
export function kernelSkipReason(tools: readonly string[] = TOOLS): string | undefined {
  const missing = missingPrerequisites(tools);
  if (missing.length === 0) return undefined;
  const reason = `kernel test needs ${missing.join(', ')}`;
  if (kernelRequired) throw new Error(`${reason} (KPTS_REQUIRE_KERNEL=1: kernel tests must run)`);
  return reason;
}

/** For use as `test('…', kernelOptions(), async (t) => …)`: skip with the reason, or run. */
export function kernelOptions(tools: readonly string[] = TOOLS): { skip: string | false } {
  const reason = kernelSkipReason(tools);
  if (reason) console.log(`# skip: ${reason}`);
  return { skip: reason ?? false };
}

/** A per-run prefix for names of namespaces, links and files a kernel test makes ("kpts-<6 hex>-"). */
export function runPrefix(): string {
  return `kpts${randomBytes(3).toString('hex')}`;
}

export type { TestContext };

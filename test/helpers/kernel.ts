// Gate for tests that need the real kernel (root, network namespaces, nft/iptables/ip/conntrack). Without the
// prerequisites such tests skip with a printed reason; with KPTS_REQUIRE_KERNEL=1 (CI) a missing prerequisite is
// a failure, never a skip.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
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

/** Deletes every network namespace whose name starts with `prefix` (a test's own, from runPrefix()). */
export function sweepNamespaces(prefix: string): void {
  const list = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  for (const line of list.split('\n')) {
    const name = line.split(' ')[0];
    if (name && name.startsWith(prefix)) execFileSync('ip', ['netns', 'del', name]);
  }
}

/**
 * Runs the TypeScript file `script` (node --import tsx) inside namespace `ns` (`ip netns exec`), as an agent runs
 * inside its node's, and resolves with the JSON of the last line it printed; a non-zero exit rejects with all it
 * printed.
 */
export function runInNamespace<T>(ns: string, script: URL, args: readonly string[] = []): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'ip',
      ['netns', 'exec', ns, process.execPath, '--import', 'tsx', script.pathname, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    child.on('error', reject);
    child.on('close', (code) => {
      const name = script.pathname.split('/').pop() ?? script.pathname;
      if (code !== 0) reject(new Error(`${name} in ${ns} exited with ${code}: ${out}${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
    });
  });
}

/** A suite of kernel tests run in network namespaces of its own (kernelNamespaces()). */
export interface NamespaceSuite<Names extends readonly string[]> {
  /** For the suite's `describe`: skip with the printed reason when a prerequisite is missing, or run. */
  readonly options: { skip: string | false };
  /** The run's prefix (runPrefix()), for other names the suite makes. */
  readonly prefix: string;
  /** The namespaces' names, `<prefix>-<suffix>` for each suffix given, in order. */
  readonly names: Names;
  /** Called inside the `describe`: before() sweeps the run's leftovers and adds every namespace, after() sweeps. */
  hooks(): void;
}

/**
 * The preamble of a kernel test that needs root and `tools` (by default ip and nft) and runs in namespaces it makes:
 * the skip options (a printed reason, a failure under KPTS_REQUIRE_KERNEL=1), a per-run prefix, one namespace per
 * suffix, and hooks that make them before the suite and remove them after it.
 */
export function kernelNamespaces<const Suffixes extends readonly string[]>(
  suffixes: Suffixes,
  tools: readonly string[] = ['ip', 'nft'],
): NamespaceSuite<{ readonly [K in keyof Suffixes]: string }> {
  const options = kernelOptions(tools);
  const prefix = runPrefix();
  const names = suffixes.map((s) => `${prefix}-${s}`) as { readonly [K in keyof Suffixes]: string };
  return {
    options,
    prefix,
    names,
    hooks: () => {
      before(() => {
        sweepNamespaces(prefix);
        for (const ns of names) execFileSync('ip', ['netns', 'add', ns]);
      });
      after(() => sweepNamespaces(prefix));
    },
  };
}

// Gate for lab tests that need host tools but not root (kubectl): skip with a printed reason when a tool is
// missing; with KPTS_REQUIRE_KERNEL=1 (CI) a missing tool is a failure, never a skip.
import { execFileSync } from 'node:child_process';

export function toolSkipReason(tools: readonly string[]): string | undefined {
  const missing = tools.filter((tool) => {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length === 0) return undefined;
  const reason = `lab test needs ${missing.join(', ')}`;
  if (process.env.KPTS_REQUIRE_KERNEL === '1')
    throw new Error(`${reason} (KPTS_REQUIRE_KERNEL=1: these tests must run)`);
  return reason;
}

export function toolOptions(tools: readonly string[]): { skip: string | false } {
  const reason = toolSkipReason(tools);
  if (reason) console.log(`# skip: ${reason}`);
  return { skip: reason ?? false };
}

/** What `fn` writes to stderr, and its result (a CLI entry point's exit code). */
export async function captureStderr<T>(fn: () => Promise<T>): Promise<{ result: T; stderr: string }> {
  let stderr = '';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array): boolean => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { result: await fn(), stderr };
  } finally {
    process.stderr.write = write;
  }
}

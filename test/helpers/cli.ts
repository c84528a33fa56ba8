// The workspace's two command lines, run from their TypeScript sources as the tests run everything.
import { fileURLToPath } from 'node:url';

/** packages/agent's CLI: the node agent and its node-side commands (`kube-proxy-ts …`). */
export const AGENT_MAIN = fileURLToPath(new URL('../../packages/agent/src/cli/main.ts', import.meta.url));

/** packages/lab's CLI (`kube-proxy-ts-lab …`, what `kube-proxy-ts lab …` runs). */
export const LAB_MAIN = fileURLToPath(new URL('../../packages/lab/src/cli/main.ts', import.meta.url));

/**
 * Node flags that run the sources: tsx for TypeScript, and the `kpts-source` exports condition, under which
 * `kube-proxy-ts/…` and `@kube-proxy-ts/…` imports resolve to each package's src/ rather than its compiled dist/.
 */
export const SOURCE_FLAGS = ['--import', 'tsx', '--conditions=kpts-source'] as const;

/** What a new login shell of root has on PATH on a Debian machine: nothing of this repository or test runner. */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

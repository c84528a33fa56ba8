// Real kubectl against an in-process lab API server. Asynchronous, never execFileSync: the server answers kubectl
// from the test's own process, so a blocking call would wait on itself.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  defaultNodes,
  startApiServer,
  type ApiServer,
  type ApiServerOptions,
} from '../../../packages/lab/src/apiserver/index.js';

/** kubectl's stdout; a failure rejects with the command and kubectl's own words. */
export function kubectl(kubeconfig: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'kubectl',
      args,
      { env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 30_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
        else resolve(stdout);
      },
    );
  });
}

/** kubectl's outcome, failure included, for steps that check a refusal. */
export function kubectlOutcome(kubeconfig: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  return kubectl(kubeconfig, args).then(
    (out) => ({ ok: true, out }),
    (e: unknown) => ({ ok: false, out: e instanceof Error ? e.message : String(e) }),
  );
}

/** What a kubectl test works with: an API server, its kubeconfig, and a folder for the manifests it applies. */
export interface KubectlLab {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly server: ApiServer;
  /** kubectl's stdout; a failure rejects. */
  k(...args: string[]): Promise<string>;
  /** `yaml` written to `file` in the folder and applied; the controllers are idle when it resolves. */
  apply(file: string, yaml: string): Promise<string>;
}

/**
 * An API server with three nodes (unless `options` says otherwise) and its kubeconfig in a new temporary folder,
 * for `use`; the server stopped and the folder removed after, also when `use` fails.
 */
export async function withKubectlLab(
  name: string,
  options: Omit<ApiServerOptions, 'kubeconfigPath'>,
  use: (lab: KubectlLab) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `kpts-${name}-`));
  const kubeconfig = join(dir, 'kubeconfig');
  let server: ApiServer | undefined;
  try {
    const s = await startApiServer({ nodes: defaultNodes(3), ...options, kubeconfigPath: kubeconfig });
    server = s;
    const k = (...args: string[]): Promise<string> => kubectl(kubeconfig, args);
    const apply = async (file: string, yaml: string): Promise<string> => {
      await writeFile(join(dir, file), yaml);
      const out = await k('apply', '-f', join(dir, file));
      await s.idle();
      return out;
    };
    await use({ dir, kubeconfig, server: s, k, apply });
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

// Real kubectl against an in-process lab API server. Asynchronous, never execFileSync: the server answers kubectl
// from the test's own process, so a blocking call would wait on itself.
import { execFile } from 'node:child_process';

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

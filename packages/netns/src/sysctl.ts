// sysctls of one namespace. Only per-namespace keys (net.*) make sense here; writing them runs `sysctl` inside
// the namespace, so the root namespace's values are never touched.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { inNamespace, runChecked } from './exec.js';

const KEY = /^net\.[A-Za-z0-9_.\-/]+$/;

function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`sysctl ${JSON.stringify(key)}: only net.* keys are per-namespace`);
  return key;
}

export async function setSysctl(
  runner: CommandRunner,
  namespace: string,
  key: string,
  value: string | number,
): Promise<void> {
  await runChecked(inNamespace(runner, namespace), `set ${key}=${value} in ${namespace}`, 'sysctl', [
    '-q',
    '-w',
    `${checkKey(key)}=${value}`,
  ]);
}

export async function getSysctl(runner: CommandRunner, namespace: string, key: string): Promise<string> {
  const out = await runChecked(inNamespace(runner, namespace), `read ${key} in ${namespace}`, 'sysctl', [
    '-n',
    checkKey(key),
  ]);
  return out.trim();
}

// Runs loadProxyConfig against in-memory files and a fixed hostname.
import assert from 'node:assert/strict';
import { loadProxyConfig } from '../../packages/agent/src/config/load.js';
import type { LoadResult } from '../../packages/agent/src/config/load.js';
import { formatProblem } from '../../packages/agent/src/config/problems.js';
import type { ProxyConfig, ProxyOptions } from '../../packages/agent/src/config/proxy-config.js';

export const HEADER = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n';

export function load(
  argv: readonly string[],
  files: Readonly<Record<string, string>> = {},
  hostname = 'Test-Node',
): LoadResult {
  return loadProxyConfig(argv, {
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return text;
    },
    hostname: () => hostname,
  });
}

/** Loads a config file body (the header is added) at /etc/kube-proxy/config.conf, plus extra flags. */
export function loadFile(body: string, extraArgs: readonly string[] = []): LoadResult {
  const path = '/etc/kube-proxy/config.conf';
  return load(['--config', path, ...extraArgs], { [path]: HEADER + body });
}

export function expectOk(r: LoadResult): {
  config: ProxyConfig;
  options: ProxyOptions;
  warnings: readonly string[];
} {
  if (!r.ok) assert.fail(`expected success, got:\n${r.errors.map(formatProblem).join('\n')}`);
  return r;
}

/** The formatted problems ("field: message"). */
export function expectErrors(r: LoadResult): string[] {
  if (r.ok) assert.fail('expected the configuration to be refused');
  return r.errors.map(formatProblem);
}

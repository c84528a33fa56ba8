// The version kube-proxy-ts reports (--version, logs, the build-info metric).
import { readFileSync } from 'node:fs';

function readVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'kube-proxy-ts' && typeof pkg.version === 'string') return `v${pkg.version}`;
    } catch {
      // try the next location (source tree vs dist/)
    }
  }
  return 'v0.0.0-unknown';
}

export const VERSION = readVersion();

// The version kube-proxy-ts reports (--version, logs, the build-info metric).
import { readFileSync } from 'node:fs';
import type { CommandRunner } from '../netfilter/command.js';

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

/** The kernel tools the agent drives, as `--version` reports them: what a node's image must carry. */
const KERNEL_TOOLS = ['nft', 'iptables-legacy', 'iptables-nft'] as const;

/** Each tool's own first line of `--version` (e.g. "nftables v1.0.6 (Lester Gooch #5)"), or "not found". */
export async function kernelToolVersions(commands: CommandRunner): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const tool of KERNEL_TOOLS) {
    const r = await commands.run(tool, ['--version']);
    const line = r.stdout.trim().split('\n')[0] ?? '';
    found[tool] = r.code === 0 && line !== '' ? line : 'not found';
  }
  return found;
}

/**
 * What `--version` prints: ours on the first line, then the kernel tools found; `--version=raw` is one JSON object
 * ({gitVersion, …tools}), as kube-proxy's raw form is.
 */
export async function versionText(raw: boolean, commands: CommandRunner): Promise<string> {
  const tools = await kernelToolVersions(commands);
  if (raw) return `${JSON.stringify({ gitVersion: VERSION, tools })}\n`;
  const lines = Object.entries(tools).map(([tool, version]) => `${tool}: ${version}`);
  return `kube-proxy-ts ${VERSION}\n${lines.join('\n')}\n`;
}

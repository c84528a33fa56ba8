// Which iptables we drive and how to call it. Debian ships both back ends side by side (iptables-legacy*,
// iptables-nft*) and points the plain names at one of them; `iptables --version` says which ("(nf_tables)" or
// "(legacy)"). The distinction matters for locking: legacy iptables serialises on the xtables lock file
// (/run/xtables.lock, or $XTABLES_LOCKFILE), while iptables-nft uses nf_tables transactions and takes no lock.
import type { IPFamily } from '../../model/ip.js';

/** 'auto' runs the plain names (whatever the host's alternatives select); the others pin a back end. */
export const IPTABLES_VARIANTS = ['auto', 'legacy', 'nft'] as const;
export type IptablesVariant = (typeof IPTABLES_VARIANTS)[number];
export type IptablesBackendKind = 'legacy' | 'nft';

export interface IptablesBinaries {
  readonly iptables: string;
  readonly restore: string;
  readonly save: string;
}

export function iptablesBinaries(family: IPFamily, variant: IptablesVariant): IptablesBinaries {
  const base = family === 'IPv6' ? 'ip6tables' : 'iptables';
  const infix = variant === 'auto' ? '' : `-${variant}`;
  return { iptables: base + infix, restore: `${base}${infix}-restore`, save: `${base}${infix}-save` };
}

export interface IptablesVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** From the "(legacy)" / "(nf_tables)" suffix; versions before 1.8 print neither and are legacy. */
  readonly backend: IptablesBackendKind;
  readonly text: string;
}

/** Parses `iptables v1.8.9 (nf_tables)`; undefined when the text has no version. */
export function parseIptablesVersion(text: string): IptablesVersion | undefined {
  const m = /v(\d+)\.(\d+)\.(\d+)/.exec(text);
  if (!m) return undefined;
  return {
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3]),
    backend: text.includes('nf_tables') ? 'nft' : 'legacy',
    text: text.trim(),
  };
}

function atLeast(v: IptablesVersion, major: number, minor: number, patch: number): boolean {
  if (v.major !== major) return v.major > major;
  if (v.minor !== minor) return v.minor > minor;
  return v.patch >= patch;
}

/** Upstream's wait flags for plain iptables commands: ≥1.6.1 `-w 5 -W 100000`, ≥1.4.22 `-w 5`, ≥1.4.20 `-w`. */
export function commandWaitFlags(v: IptablesVersion, waitSeconds: number): string[] {
  if (atLeast(v, 1, 6, 1)) return ['-w', String(waitSeconds), '-W', '100000'];
  if (atLeast(v, 1, 4, 22)) return ['-w', String(waitSeconds)];
  if (atLeast(v, 1, 4, 20)) return ['-w'];
  return [];
}

/**
 * Upstream's wait flags for iptables-restore: ≥1.6.2 `-w 5 -W 100000`; older restores had no usable wait flag
 * (upstream then takes the lock itself; we require ≥1.6.2 for waiting and otherwise pass none).
 */
export function restoreWaitFlags(v: IptablesVersion, waitSeconds: number): string[] {
  if (atLeast(v, 1, 6, 2)) return ['-w', String(waitSeconds), '-W', '100000'];
  return [];
}

/** Upstream enables MASQUERADE --random-fully from iptables 1.6.2 on. */
export function supportsRandomFully(v: IptablesVersion): boolean {
  return atLeast(v, 1, 6, 2);
}

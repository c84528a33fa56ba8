// What a running lab records about itself (state.json in the state directory), so that `lab down`, `lab status`
// and `lab exec` work from another terminal, also after the lab process crashed. The file is read as untrusted
// input: a field of the wrong type makes the whole record unreadable, with the field named.
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { isObject } from '../apiserver/json.js';
import { DEFAULT_IP_FAMILY, LAB_IP_FAMILIES, labLayout, type LabIPFamily, type LabLayout } from './layout.js';
import { IPTABLES_BACKENDS, type IptablesBackendName } from './node-env.js';
import { readPidFile } from './processes.js';
import { isOneOf } from 'kube-proxy-ts/config/choice.js';
import { NFTABLES_LAYOUTS, type NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { PROXY_MODES, type ProxyMode } from 'kube-proxy-ts/config/proxy-mode.js';

export interface LabState {
  readonly version: 1;
  /** The lab process; 0 once it has shut down cleanly. */
  readonly pid: number;
  readonly prefix: string;
  readonly nodes: readonly string[];
  readonly mode: ProxyMode;
  /** `lab up --iptables`: the back end the proxies' `iptables*` run; absent = the host's. */
  readonly iptables?: IptablesBackendName;
  /** `lab up --nftables-layout`; absent = upstream's. */
  readonly nftablesLayout?: NftablesLayoutName;
  /** `lab up --ip-family`: the families of nodes, pods and Services; absent = ipv4 (a lab from before the flag). */
  readonly ipFamily?: LabIPFamily;
  readonly startedAt: string;
  readonly apiserverURL: string;
  readonly token: string;
  readonly caPem: string;
  /** The web view's URL, with its token (absent when the lab serves none). */
  readonly webURL?: string;
}

export type StateRead =
  | { readonly ok: true; readonly state: LabState }
  | { readonly ok: false; readonly missing: boolean; readonly reason: string };

export function readLabState(path: string): StateRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const missing = isObject(e) && e.code === 'ENOENT';
    return { ok: false, missing, reason: `${path}: ${e instanceof Error ? e.message : String(e)}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, missing: false, reason: `${path}: not JSON (${String(e)})` };
  }
  if (!isObject(raw)) return { ok: false, missing: false, reason: `${path}: not an object` };
  const isString = (v: unknown): v is string => typeof v === 'string';
  const problems: string[] = [];
  const want = (name: string, ok: boolean): void => {
    if (!ok) problems.push(name);
  };
  want('version', raw.version === 1);
  want('pid', typeof raw.pid === 'number' && Number.isInteger(raw.pid) && raw.pid >= 0);
  // A short prefix could match other people's namespaces when `lab down` sweeps it.
  want('prefix', isString(raw.prefix) && raw.prefix.length >= 6);
  want('nodes', Array.isArray(raw.nodes) && raw.nodes.every(isString));
  const oneOf = (list: readonly string[], v: unknown): boolean => isString(v) && isOneOf(list, v);
  want('mode', oneOf(PROXY_MODES, raw.mode));
  want('iptables', raw.iptables === undefined || oneOf(IPTABLES_BACKENDS, raw.iptables));
  want('nftablesLayout', raw.nftablesLayout === undefined || oneOf(NFTABLES_LAYOUTS, raw.nftablesLayout));
  want('ipFamily', raw.ipFamily === undefined || oneOf(LAB_IP_FAMILIES, raw.ipFamily));
  for (const name of ['startedAt', 'apiserverURL', 'token', 'caPem']) want(name, isString(raw[name]));
  want('webURL', raw.webURL === undefined || isString(raw.webURL));
  if (problems.length > 0)
    return {
      ok: false,
      missing: false,
      reason: `${path}: fields missing or of the wrong type: ${problems.join(', ')}`,
    };
  return { ok: true, state: raw as unknown as LabState };
}

/** The layout a recorded lab was built with: its nodes, prefix and families (for down, exec, status, …). */
export function layoutOf(state: LabState): LabLayout {
  return labLayout(state.nodes.length, state.prefix, state.ipFamily ?? DEFAULT_IP_FAMILY);
}

/** Writes atomically (temporary file + rename), readable by root only: it holds the lab's bearer token. */
export function writeLabState(path: string, state: LabState): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

/** Whether a process with this PID exists (signal 0 checks without signalling). */
export function processAlive(pid: number): boolean {
  if (pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return isObject(e) && e.code === 'EPERM';
  }
}

/** Whether `pid` is a lab process (its command line says `lab up`, or it is a test running startLab). */
export function looksLikeLab(pid: number): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('node');
  } catch {
    return false;
  }
}

export type LockResult =
  { readonly ok: true; release(): void } | { readonly ok: false; readonly holder: number };

/**
 * One lab per state directory: a lock file created exclusively, holding the owner's PID. A lock whose owner is
 * gone (a crashed lab) is taken over; the caller then cleans up what that lab left behind.
 */
export function acquireLabLock(lockFile: string): LockResult {
  mkdirSync(dirname(lockFile), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return {
        ok: true,
        release: () => {
          if (readLockHolder(lockFile) === process.pid) rmSync(lockFile, { force: true });
        },
      };
    } catch (e) {
      if (!isObject(e) || e.code !== 'EEXIST') throw e;
      const holder = readLockHolder(lockFile);
      if (holder !== undefined && processAlive(holder) && looksLikeLab(holder)) return { ok: false, holder };
      rmSync(lockFile, { force: true });
    }
  }
  return { ok: false, holder: readLockHolder(lockFile) ?? 0 };
}

/** The lab lock's holder: the lock file holds its PID, as a pid file does. */
export function readLockHolder(lockFile: string): number | undefined {
  return readPidFile(lockFile);
}

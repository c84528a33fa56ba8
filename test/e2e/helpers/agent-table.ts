// What the kernel holds, in a form two tables can be compared in: `nft -j list table ip kube-proxy` without
// handles, chains and containers keyed by name, elements sorted, rules in order. The expected table is computed
// independently of the running proxy: `kube-proxy-ts render` of the final API objects, applied with `nft -f` to a
// fresh reference namespace and listed back the same way.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { renderCommand } from '../../../packages/agent/src/cli/render.js';
import type { NftablesLayoutName } from '../../../packages/agent/src/config/nftables-layout.js';

export interface CanonicalChain {
  /** type/hook/prio/policy for base chains; empty for regular chains. */
  readonly base: string;
  readonly rules: readonly string[];
}

export interface CanonicalContainer {
  /** kind, key type, value type, flags, comment: everything but the elements. */
  readonly shape: string;
  readonly elements: readonly string[];
}

export interface CanonicalTable {
  readonly chains: Readonly<Record<string, CanonicalChain>>;
  readonly containers: Readonly<Record<string, CanonicalContainer>>;
}

export interface Exec {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command in the test process (tests may spawn; src/ goes through CommandRunner). */
export function exec(cmd: string, args: readonly string[], stdin = '', timeoutMs = 30_000): Promise<Exec> {
  return new Promise((resolve) => {
    const child = spawn(cmd, [...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs); // a deadline, not a wait
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout: '', stderr: e.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        code: code ?? 128,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

export function inNs(ns: string, cmd: string, args: readonly string[], stdin = ''): Promise<Exec> {
  return exec('ip', ['netns', 'exec', ns, cmd, ...args], stdin);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Counters hold traffic, not configuration: zero them so that a table that saw packets compares equal. */
function withoutCounters(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutCounters);
  if (!isRecord(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(v)) {
    out[k] = k === 'counter' && isRecord(val) ? { packets: 0, bytes: 0 } : withoutCounters(val);
  }
  return out;
}

/** Parses `nft -j list table …` output into a CanonicalTable. */
export function canonicalTable(json: string): CanonicalTable {
  const parsed: unknown = JSON.parse(json);
  const items = isRecord(parsed) && Array.isArray(parsed.nftables) ? (parsed.nftables as unknown[]) : [];
  const chains: Record<string, { base: string; rules: string[] }> = {};
  const containers: Record<string, CanonicalContainer> = {};
  const chain = (name: string): { base: string; rules: string[] } =>
    (chains[name] ??= { base: '', rules: [] });
  for (const item of items) {
    if (!isRecord(item)) continue;
    if (isRecord(item.chain)) {
      const { type, hook, prio, policy, name } = item.chain;
      const c = chain(String(name));
      if (hook !== undefined) c.base = JSON.stringify({ type, hook, prio, policy });
    } else if (isRecord(item.rule)) {
      const { chain: name, expr, comment } = item.rule;
      chain(String(name)).rules.push(JSON.stringify(withoutCounters({ expr, comment })));
    } else {
      const kind = isRecord(item.set) ? 'set' : isRecord(item.map) ? 'map' : undefined;
      if (kind === undefined) continue;
      const {
        name,
        handle: _handle,
        elem,
        table: _table,
        family: _family,
        ...shape
      } = item[kind] as Record<string, unknown>;
      const elements = (Array.isArray(elem) ? elem : []).map((e) => JSON.stringify(e)).sort();
      containers[`${kind} ${String(name)}`] = { shape: JSON.stringify(shape), elements };
    }
  }
  return { chains, containers };
}

/**
 * Drops from `actual` the chains upstream leaves behind on purpose: a service chain that fell out of use is
 * flushed at once and deleted by a later sync (≥ 1 s on, in its own transaction), so an empty service chain
 * (name with "/") that `expected` lacks is a stale chain waiting for the next sync, not a difference.
 */
export function withoutStaleChains(actual: CanonicalTable, expected: CanonicalTable): CanonicalTable {
  const chains: Record<string, CanonicalChain> = {};
  for (const [name, c] of Object.entries(actual.chains)) {
    const stale = name.includes('/') && c.rules.length === 0 && c.base === '' && !(name in expected.chains);
    if (!stale) chains[name] = c;
  }
  return { chains, containers: actual.containers };
}

/** The namespace's `ip kube-proxy` table, or undefined when there is none. */
export async function listTable(ns: string): Promise<CanonicalTable | undefined> {
  const r = await inNs(ns, 'nft', ['-j', 'list', 'table', 'ip', 'kube-proxy']);
  if (r.code !== 0) {
    if (/No such file or directory/.test(r.stderr)) return undefined;
    throw new Error(`nft list in ${ns} failed (${r.code}): ${r.stderr}`);
  }
  return canonicalTable(r.stdout);
}

/**
 * Replaces the namespace's `ip kube-proxy` table with one whose service-ips map has another type, as a careless
 * operator might. The proxy cannot repair it: its "add map" of the right type is refused (File exists), its
 * elements do not fit, and a full sync flushes a table's contents, never a container it did not find wrong by name.
 * So every sync fails until the table is deleted.
 */
export async function replaceWithConflictingTable(ns: string): Promise<void> {
  const script = [
    'delete table ip kube-proxy',
    'add table ip kube-proxy',
    'add map ip kube-proxy service-ips { type ipv4_addr : verdict ; }',
    '',
  ].join('\n');
  const r = await inNs(ns, 'nft', ['-f', '-'], script);
  if (r.code !== 0) throw new Error(`nft -f in ${ns} failed (${r.code}): ${r.stderr}`);
}

export interface RenderNode {
  readonly nodeName: string;
  /** --node-ip; undefined: not passed, so render takes the node's IPs from its Node object, as the agent does. */
  readonly nodeIP: string | undefined;
  readonly clusterCIDR: string;
  /** --detect-local-mode; omitted, render's default (ClusterCIDR). */
  readonly detectLocalMode?: string;
  /** The proxy's --nftables-layout; omitted, render's default (upstream's), as an operator would leave it. */
  readonly layout?: NftablesLayoutName;
}

/** `kube-proxy-ts render` of a manifest file (in-process: the same command an operator runs), as nft text. */
export function renderNft(manifestPath: string, node: RenderNode): string {
  let stdout = '';
  let stderr = '';
  const code = renderCommand(
    [
      '--proxy-mode',
      'nftables',
      '-f',
      manifestPath,
      '--hostname-override',
      node.nodeName,
      ...(node.nodeIP !== undefined ? ['--node-ip', node.nodeIP] : []),
      '--cluster-cidr',
      node.clusterCIDR,
      ...(node.detectLocalMode !== undefined ? ['--detect-local-mode', node.detectLocalMode] : []),
      ...(node.layout !== undefined ? ['--nftables-layout', node.layout] : []),
    ],
    {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
      readFile: (p) => readFileSync(p, 'utf8'),
      hostname: () => node.nodeName,
    },
  );
  if (code !== 0) throw new Error(`render failed (${code}): ${stderr}`);
  return stdout;
}

/** Applies `render` output to the reference namespace (replacing its table) and lists it back. */
export async function expectedTable(
  refNs: string,
  manifest: string,
  manifestPath: string,
  node: RenderNode,
): Promise<CanonicalTable> {
  writeFileSync(manifestPath, manifest);
  const text = renderNft(manifestPath, node);
  await inNs(refNs, 'nft', ['delete', 'table', 'ip', 'kube-proxy']);
  const applied = await inNs(refNs, 'nft', ['-f', '-'], text);
  if (applied.code !== 0) throw new Error(`nft -f of the rendered rules failed: ${applied.stderr}`);
  const table = await listTable(refNs);
  if (!table) throw new Error('the reference namespace has no table after applying the render');
  return table;
}

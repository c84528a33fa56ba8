// `npm run bench`: numbers, not pass/fail. Every mode's module (bench/<mode>.ts, shape in bench/types.ts) runs
// inside one private network namespace and adds its rows to one table, so modes compare side by side.
// Needs root, `ip` and the modes' tools; touches nothing outside its namespace.
//
// Each (mode, size) runs in a fresh Node process, so its peak RSS is that run's alone (not the garbage of an
// earlier, smaller run or of another mode). Run the compiled build to measure what a user runs: under tsx the
// loader's own thread adds ~25 MiB to every process.
//   npm run build; KPTS_BENCH_MODES=nftables KPTS_BENCH_SIZES=1000,10000 node dist/bench/main.js
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { AGENT_NODE_FLAGS } from '../src/util/node-flags.js';
import { netnsCommandRunner } from '../src/netfilter/command.js';
import { iptablesBench } from './iptables.js';
import { nftablesBench } from './nftables.js';
import type { BenchContext, BenchModule, BenchRow } from './types.js';

const MODULES: readonly BenchModule[] = [nftablesBench, iptablesBench];

/** Set in the per-run child: `{ mode, size, ns }`. */
const CHILD_ENV = 'KPTS_BENCH_CHILD';
const ROWS_MARK = 'KPTS_BENCH_ROWS ';

function parseSizes(): number[] {
  const arg = process.env.KPTS_BENCH_SIZES ?? '1000,10000';
  return arg
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
}

function selectedModules(): BenchModule[] {
  const modes = process.env.KPTS_BENCH_MODES?.split(',').map((s) => s.trim());
  return MODULES.filter((m) => !modes || modes.includes(m.mode));
}

function context(ns: string, sizes: readonly number[]): BenchContext {
  return { commands: netnsCommandRunner(ns), sizes, endpointsPerService: 10, repeats: 9 };
}

function fmt(n: number, digits = 1): string {
  return n.toFixed(digits);
}

function printTable(rows: readonly BenchRow[]): void {
  const header = [
    'mode',
    'services',
    'eps',
    'sync',
    'ops',
    'own ms',
    'kernel ms',
    'total ms',
    'floor ms',
    'total/floor',
    'own/full own',
    'peak RSS MiB',
    'pre-sync RSS',
    'tool RSS MiB',
  ];
  const lines: string[][] = [header];
  for (const r of rows) {
    const fullRow = rows.find((x) => x.mode === r.mode && x.services === r.services && x.sync === 'full');
    const total = r.ownMs + r.kernelMs;
    lines.push([
      r.mode,
      String(r.services),
      String(r.endpointsPerService),
      r.sync,
      String(r.operations),
      fmt(r.ownMs, 2),
      fmt(r.kernelMs),
      fmt(total),
      fmt(r.floorMs),
      fmt(total / r.floorMs, 2),
      fullRow && r.sync !== 'full' ? `${fmt((100 * r.ownMs) / fullRow.ownMs, 2)}%` : '',
      fmt(r.peakRssMiB, 0),
      r.rssBeforeSyncMiB === undefined ? '' : fmt(r.rssBeforeSyncMiB, 0),
      r.toolPeakRssMiB === undefined ? '' : fmt(r.toolPeakRssMiB, 0),
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  for (const l of lines) console.log(l.map((c, i) => c.padStart(widths[i] ?? 0)).join('  '));
}

/** Runs one (mode, size) in a fresh process (this script, same loader flags) and collects its rows. */
function runChild(mode: string, size: number, ns: string): Promise<BenchRow[]> {
  return new Promise((resolve, reject) => {
    const script = process.argv[1] ?? '';
    const child = spawn(process.execPath, [...process.execArgv, ...AGENT_NODE_FLAGS, script], {
      env: { ...process.env, [CHILD_ENV]: JSON.stringify({ mode, size, ns }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s: string) => (out += s));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(ROWS_MARK));
      if (code !== 0 || line === undefined) {
        reject(new Error(`${mode} at ${size} Services: child exited with ${code}\n${out}`));
        return;
      }
      resolve(JSON.parse(line.slice(ROWS_MARK.length)) as BenchRow[]);
    });
  });
}

async function child(spec: string): Promise<void> {
  const { mode, size, ns } = JSON.parse(spec) as { mode: string; size: number; ns: string };
  const m = MODULES.find((x) => x.mode === mode);
  if (!m) throw new Error(`no bench module ${mode}`);
  const rows = await m.run(context(ns, [size]));
  process.stdout.write(ROWS_MARK + JSON.stringify(rows) + '\n');
}

async function main(): Promise<void> {
  const ns = `kpts${randomBytes(3).toString('hex')}-bench`;
  execFileSync('ip', ['netns', 'add', ns]);
  const cleanup = (): void => {
    try {
      execFileSync('ip', ['netns', 'del', ns]);
    } catch {
      // already gone
    }
  };
  const onSignal = (): void => {
    cleanup();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const rows: BenchRow[] = [];
    for (const m of selectedModules())
      for (const n of parseSizes()) rows.push(...(await runChild(m.mode, n, ns)));
    printTable(rows);
  } finally {
    cleanup();
  }
}

const spec = process.env[CHILD_ENV];
if (spec !== undefined) await child(spec);
else await main();

// `npm run bench`: numbers, not pass/fail. Every mode's module (bench/<mode>.ts, shape in bench/types.ts) runs
// inside one private network namespace and adds its rows to one table, so modes compare side by side.
// Needs root, `ip` and the modes' tools; touches nothing outside its namespace.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { netnsCommandRunner } from '../src/netfilter/command.js';
import { iptablesBench } from './iptables.js';
import { nftablesBench } from './nftables.js';
import type { BenchModule, BenchRow } from './types.js';

const MODULES: readonly BenchModule[] = [nftablesBench, iptablesBench];

function parseSizes(): number[] {
  const arg = process.env.KPTS_BENCH_SIZES ?? '1000,10000';
  return arg
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
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
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
  for (const l of lines) console.log(l.map((c, i) => c.padStart(widths[i] ?? 0)).join('  '));
}

async function main(): Promise<void> {
  const ns = `kpts${randomBytes(3).toString('hex')}-bench`;
  execFileSync('ip', ['netns', 'add', ns]);
  try {
    const ctx = {
      commands: netnsCommandRunner(ns),
      sizes: parseSizes(),
      endpointsPerService: 10,
      repeats: 5,
    };
    const rows: BenchRow[] = [];
    for (const m of MODULES) rows.push(...(await m.run(ctx)));
    printTable(rows);
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
  }
}

await main();

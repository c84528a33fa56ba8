// `kube-proxy-ts render … | nft -f -` timed: render's text for the workload (bench/workload.ts) loaded by nft into
// a fresh network namespace this bench makes (never the host's), for both nftables layouts, as render writes it
// (a set's elements in statements of up to 1,000) and, beside it, the same operations one statement each (how
// render wrote them before, the layout of upstream's own text). Wall time from nft's start to its exit, and nft's
// CPU (user + system, as the shell's `times` reports for its child). Part of the render section of `npm run bench`;
// alone, on a 10,000-Service dump of its own: `npm run build && node dist/bench/render-load.js`.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { renderCommand } from 'kube-proxy-ts/cli/render.js';
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { elementLines } from 'kube-proxy-ts/netfilter/nft/parse.js';
import { WORKLOAD_NODE, workloadRenderArgs, writeWorkloadDump } from './render.js';

/** Runs of each (layout, text form); the table shows their medians. */
const REPEATS = 3;
/** What the issue asks of the flat layout's text at 10,000 Services × 10, s. */
const FLAT_TARGET_S = 1.5;

type TextForm = 'statements' | 'one per element';

interface Load {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** render's stdout for `dump` with this layout, in this process (the CLI's own code path). */
function renderText(dump: string, layout: NftablesLayoutName): string {
  const out: string[] = [];
  const args = [...workloadRenderArgs(dump).slice(1), '--nftables-layout', layout];
  const code = renderCommand(args, {
    stdout: (t) => void out.push(t),
    stderr: () => undefined,
    readFile: (p) => readFileSync(p, 'utf8'),
    hostname: () => WORKLOAD_NODE.name,
  });
  if (code !== 0) throw new Error(`render --nftables-layout ${layout} exited ${code}`);
  return out.join('');
}

/** The same operations, one statement each. */
function onePerElement(text: string): string {
  return text
    .split('\n')
    .flatMap((l) => (l === '' ? [] : elementLines(l)))
    .map((l) => `${l}\n`)
    .join('');
}

/** POSIX `times`' second line (the children's user and system time), e.g. `0m1.120s 0m0.300s`, in ms. */
function childCpuMs(times: string): number {
  const line = times.trim().split('\n')[1] ?? '';
  const parts = [...line.matchAll(/(\d+)m([\d.]+)s/g)];
  if (parts.length !== 2) throw new Error(`cannot read times output: ${times}`);
  return parts.reduce((ms, m) => ms + (Number(m[1]) * 60 + Number(m[2])) * 1000, 0);
}

/** `nft -f FILE` inside a namespace made for this one load and deleted after it. */
function loadOnce(file: string): Promise<Load> {
  const ns = `kpts${randomBytes(3).toString('hex')}-bench-load`;
  execFileSync('ip', ['netns', 'add', ns]);
  return new Promise<Load>((resolve, reject) => {
    const started = performance.now();
    const child = spawn('sh', ['-c', 'ip netns exec "$1" nft -f "$2" || exit 1; times', 'sh', ns, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) reject(new Error(`nft -f ${file} failed: ${err.slice(0, 300)}`));
      else resolve({ wallMs, cpuMs: childCpuMs(out) });
    });
  }).finally(() => execFileSync('ip', ['netns', 'del', ns]));
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

/**
 * Prints the table for `dump` (`services` Services × 10 endpoints, JSON). Needs root, `ip` and `nft`; without
 * them it says so and returns.
 */
export async function runRenderLoadBench(dump: string, services: number, dir: string): Promise<void> {
  // On a busy machine nft waits for a core: the wall time is then well above its CPU time; the load says how busy.
  const load = loadavg()[0]?.toFixed(1) ?? '?';
  console.log(
    `\nrender | nft -f -, ${services.toLocaleString('en-US')} Services × 10 endpoints, each load into a fresh ` +
      `network namespace (median of ${REPEATS}; CPU = nft's user + system; load average ${load} at the start)`,
  );
  if (process.getuid?.() !== 0) {
    console.log('  skipped: needs root (a network namespace per load)');
    return;
  }
  const header = ['layout', 'text', 'statements', 'MB', 'nft wall s', 'nft CPU s', 'target s', 'note'];
  const rows: string[][] = [header];
  for (const layout of ['flat', 'upstream'] as const) {
    const rendered = renderText(dump, layout);
    const forms: [TextForm, string][] = [
      ['statements', rendered],
      ['one per element', onePerElement(rendered)],
    ];
    for (const [form, text] of forms) {
      const file = join(dir, `render-${layout}-${form.replace(/ /g, '-')}.nft`);
      writeFileSync(file, text);
      const loads: Load[] = [];
      for (let i = 0; i < REPEATS; i++) loads.push(await loadOnce(file));
      const wall = median(loads.map((l) => l.wallMs)) / 1000;
      const target = layout === 'flat' && form === 'statements' ? FLAT_TARGET_S : undefined;
      rows.push([
        layout,
        form === 'statements' ? 'render' : 'one per element',
        (text.split('\n').length - 1).toLocaleString('en-US'),
        (text.length / 1e6).toFixed(1),
        wall.toFixed(2),
        (median(loads.map((l) => l.cpuMs)) / 1000).toFixed(2),
        target === undefined ? '' : String(target),
        target !== undefined && wall > target ? 'over target' : '',
      ]);
    }
  }
  const widths = header.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i] ?? 0)).join('  '));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = mkdtempSync(join(tmpdir(), 'kpts-bench-render-load-'));
  try {
    const dump = join(dir, 'dump.json');
    writeWorkloadDump(dump, 10_000, 10, 'json');
    await runRenderLoadBench(dump, 10_000, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

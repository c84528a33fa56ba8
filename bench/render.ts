// `kube-proxy-ts render -f DUMP` on the benchmark workload (bench/workload.ts) written as a user's dump: a
// `kind: List` JSON as `kubectl get svc,endpointslices -A -o json` prints it, or multi-document YAML. Numbers, not
// pass/fail. Each case runs twice, each time in a fresh process with the agent's Node flags, as the bin runs:
// - the CLI itself (dist/src/cli/main.js), stdout a pipe this process drains: the wall time a user waits;
// - renderCommand in-process with the same arguments, timing its stages: reading (file and parse), the model
//   (trackers → snapshot), rendering, and handing the text to stdout until it has drained.
// Then render's text at 10,000 Services, both layouts, loaded by `nft -f` into a fresh network namespace
// (bench/render-load.ts). Run with `npm run bench` (its own section and tables), or alone:
//   npm run build; KPTS_BENCH_MODES=render node dist/bench/main.js
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { renderCommand } from 'kube-proxy-ts/cli/render.js';
import type { RenderPhase } from 'kube-proxy-ts/cli/render.js';
import type { ProxyMode } from 'kube-proxy-ts/config/proxy-mode.js';
import { AGENT_NODE_FLAGS } from 'kube-proxy-ts/util/node-flags.js';
import { benchService, benchSlice } from './workload.js';

/** The node the workload's first endpoints are on (bench/workload.ts). */
export const WORKLOAD_NODE = { name: 'bench-node', ip: '198.18.0.2' } as const;

export type DumpFormat = 'json' | 'yaml';

/** The workload's Services and EndpointSlices as the API server returns them (with apiVersion and kind). */
function* workloadObjects(services: number, endpointsPerService: number): Generator<object> {
  for (let i = 0; i < services; i++) yield { apiVersion: 'v1', kind: 'Service', ...benchService(i) };
  for (let i = 0; i < services; i++) {
    yield {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      ...benchSlice(i, endpointsPerService, 0),
    };
  }
}

/**
 * Writes the workload as a dump file, one object at a time (a 100,000-Service List is ~290 MB): JSON as kubectl
 * prints it (a List, 4-space indent), or YAML documents separated by `---`. Returns the file's size in bytes.
 */
export function writeWorkloadDump(
  path: string,
  services: number,
  endpointsPerService: number,
  format: DumpFormat,
): number {
  const fd = openSync(path, 'w');
  try {
    if (format === 'json') writeSync(fd, '{\n    "apiVersion": "v1",\n    "items": [\n');
    let first = true;
    for (const obj of workloadObjects(services, endpointsPerService)) {
      if (format === 'json') {
        const item = JSON.stringify(obj, null, 4).replace(/^/gm, '        ');
        writeSync(fd, first ? item : `,\n${item}`);
      } else {
        writeSync(fd, first ? stringify(obj) : `---\n${stringify(obj)}`);
      }
      first = false;
    }
    if (format === 'json') writeSync(fd, '\n    ],\n    "kind": "List",\n    "metadata": {}\n}\n');
  } finally {
    closeSync(fd);
  }
  return statSync(path).size;
}

/** The CLI arguments that render `file` as the workload's node would (nftables mode unless told). */
export function workloadRenderArgs(file: string, mode: ProxyMode = 'nftables'): string[] {
  return [
    'render',
    '--proxy-mode',
    mode,
    '-f',
    file,
    '--hostname-override',
    WORKLOAD_NODE.name,
    '--node-ip',
    WORKLOAD_NODE.ip,
  ];
}

interface RenderCase {
  readonly mode: ProxyMode;
  readonly format: DumpFormat;
  readonly services: number;
  /** What the issue asks of this case, s. */
  readonly targetS: number;
}

const CASES: readonly RenderCase[] = [
  { mode: 'nftables', format: 'json', services: 10_000, targetS: 2 },
  { mode: 'nftables', format: 'yaml', services: 10_000, targetS: 5 },
  { mode: 'nftables', format: 'json', services: 100_000, targetS: 15 },
  { mode: 'iptables', format: 'json', services: 100_000, targetS: 15 },
];
const ENDPOINTS_PER_SERVICE = 10;
/** The size whose render output is also loaded by nft (bench/render-load.ts); one size: each load takes seconds. */
const LOAD_SERVICES = 10_000;

interface StageTimes {
  readonly phases: Partial<Record<RenderPhase, number>>;
  readonly peakRssMiB: number;
}

const CHILD_ENV = 'KPTS_BENCH_RENDER_CHILD';
const MARK = 'KPTS_BENCH_RENDER ';
const THIS_FILE = fileURLToPath(import.meta.url);
const CLI = fileURLToPath(import.meta.resolve('kube-proxy-ts/cli/main.js'));

interface ChildRun {
  readonly wallMs: number;
  readonly stdoutBytes: number;
  readonly stderr: string;
}

/** Runs `node <flags> script args` with stdout a pipe we drain; resolves with its wall time once it exits 0. */
function runNode(script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, script, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdoutBytes = 0;
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdoutBytes += b.length));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) reject(new Error(`${script} ${args.join(' ')} exited ${code}:\n${stderr}`));
      else resolve({ wallMs, stdoutBytes, stderr });
    });
  });
}

/** In the child: renderCommand as main.ts runs it, with its stages timed; reports them on stderr. */
async function child(spec: string): Promise<void> {
  const { file, mode } = JSON.parse(spec) as { file: string; mode: ProxyMode };
  const phases: Partial<Record<RenderPhase, number>> = {};
  const code = renderCommand(workloadRenderArgs(file, mode).slice(1), {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    readFile: (p) => readFileSync(p, 'utf8'),
    hostname: () => WORKLOAD_NODE.name,
    onPhase: (phase, ms) => (phases[phase] = ms),
  });
  if (code !== 0) throw new Error(`render exited ${code}`);
  const flushStart = performance.now();
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  phases.write = (phases.write ?? 0) + (performance.now() - flushStart);
  const times: StageTimes = { phases, peakRssMiB: process.resourceUsage().maxRSS / 1024 };
  process.stderr.write(`${MARK}${JSON.stringify(times)}\n`);
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? '' : (ms / 1000).toFixed(2);
}

/** Generates the dumps, runs every case, prints one table. */
export async function runRenderBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kpts-bench-render-'));
  try {
    const header = [
      'mode',
      'input',
      'services',
      'eps',
      'MB',
      'read s',
      'model s',
      'render s',
      'write s',
      'stages s',
      'CLI wall s',
      'target s',
      'peak RSS MiB',
      'output MB',
      'note',
    ];
    const lines: string[][] = [header];
    const dumps = new Map<string, number>();
    for (const c of CASES) {
      // Cases on the same input share one dump file.
      const file = join(dir, `dump-${c.services}.${c.format}`);
      const bytes = dumps.get(file) ?? writeWorkloadDump(file, c.services, ENDPOINTS_PER_SERVICE, c.format);
      dumps.set(file, bytes);
      const first = [
        c.mode,
        c.format,
        String(c.services),
        String(ENDPOINTS_PER_SERVICE),
        (bytes / 1e6).toFixed(0),
      ];
      try {
        const cli = await runNode(CLI, workloadRenderArgs(file, c.mode));
        const staged = await runNode(THIS_FILE, [], {
          [CHILD_ENV]: JSON.stringify({ file, mode: c.mode }),
        });
        const line = staged.stderr.split('\n').find((l) => l.startsWith(MARK));
        if (line === undefined) throw new Error(`render bench child printed no timings:\n${staged.stderr}`);
        const t = JSON.parse(line.slice(MARK.length)) as StageTimes;
        const stages = Object.values(t.phases).reduce((a, b) => a + b, 0);
        lines.push([
          ...first,
          seconds(t.phases.read),
          seconds(t.phases.model),
          seconds(t.phases.render),
          seconds(t.phases.write),
          seconds(stages),
          seconds(cli.wallMs),
          String(c.targetS),
          t.peakRssMiB.toFixed(0),
          (cli.stdoutBytes / 1e6).toFixed(1),
          cli.wallMs / 1000 > c.targetS ? 'over target' : '',
        ]);
      } catch (e) {
        // One case failing (a renderer's bug at a size) still leaves the others' numbers to read.
        const message = e instanceof Error ? e.message : String(e);
        const cause = message.split('\n').find((l) => /Error/.test(l)) ?? message.split('\n')[0] ?? '';
        lines.push([...first, '', '', '', '', '', '', String(c.targetS), '', '', `failed: ${cause.trim()}`]);
      }
    }
    const widths = header.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
    console.log('\nrender -f DUMP (CLI wall = process start to exit, its output drained through a pipe)');
    for (const l of lines) console.log(l.map((cell, i) => cell.padStart(widths[i] ?? 0)).join('  '));
    // What nft makes of render's text (bench/render-load.ts), on the 10,000-Service JSON dump written above.
    const loadDump = join(dir, `dump-${LOAD_SERVICES}.json`);
    if (dumps.has(loadDump))
      await (await import('./render-load.js')).runRenderLoadBench(loadDump, LOAD_SERVICES, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const childSpec = process.env[CHILD_ENV];
if (childSpec !== undefined && process.argv[1] === THIS_FILE) await child(childSpec);

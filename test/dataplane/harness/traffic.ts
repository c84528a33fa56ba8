// Sends requests from inside a namespace with traffic-client.ts and reads back what each request got: which pod
// answered and which client address it saw, or why it failed.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { startInNamespace } from '../../../packages/netns/src/exec.js';
import type { RequestOutcome } from '../traffic-client.js';
import { scaledTimeout } from '../../helpers/wait-for.js';

export type { RequestOutcome };

const CLIENT_SCRIPT = new URL('../traffic-client.ts', import.meta.url).pathname;
const TSX_IMPORT = import.meta.resolve('tsx');
/** The client's start-up allowance in its hard ceiling (scaled where Node.js starts slowly, as in a guest). */
const CLIENT_START_MS = scaledTimeout(30_000);

export interface TrafficSpec {
  readonly proto: 'http' | 'udp';
  readonly ip: string;
  readonly port: number;
  readonly count: number;
  readonly intervalMs?: number;
  readonly timeoutMs?: number;
}

function clientArgs(spec: TrafficSpec, extra: readonly string[] = []): string[] {
  const target = spec.ip.includes(':') ? `[${spec.ip}]:${spec.port}` : `${spec.ip}:${spec.port}`;
  return [
    '--import',
    TSX_IMPORT,
    CLIENT_SCRIPT,
    '--proto',
    spec.proto,
    '--target',
    target,
    '--count',
    String(spec.count),
    '--interval-ms',
    String(spec.intervalMs ?? 0),
    '--timeout-ms',
    String(spec.timeoutMs ?? 2000),
    ...extra,
  ];
}

/** Parses the client's JSON lines; a line that is not an outcome is an error (the client is ours). */
export function parseOutcomes(text: string): RequestOutcome[] {
  const outcomes: RequestOutcome[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const v: unknown = JSON.parse(line);
    if (typeof v !== 'object' || v === null)
      throw new Error(`traffic client printed ${JSON.stringify(line)}`);
    const o = v as Record<string, unknown>;
    if (typeof o.seq !== 'number' || typeof o.startedAt !== 'number') throw new Error(`bad outcome ${line}`);
    if (
      o.ok === true &&
      typeof o.pod === 'string' &&
      typeof o.clientIP === 'string' &&
      typeof o.clientPort === 'number'
    ) {
      outcomes.push({
        seq: o.seq,
        startedAt: o.startedAt,
        ok: true,
        pod: o.pod,
        clientIP: o.clientIP,
        clientPort: o.clientPort,
      });
    } else if (o.ok === false && typeof o.error === 'string') {
      outcomes.push({ seq: o.seq, startedAt: o.startedAt, ok: false, error: o.error });
    } else {
      throw new Error(`bad outcome ${line}`);
    }
  }
  return outcomes;
}

/** Runs `spec.count` requests from `namespace`, one after another; resolves with every outcome. */
export async function sendRequests(
  runner: CommandRunner,
  namespace: string,
  spec: TrafficSpec,
): Promise<RequestOutcome[]> {
  const proc = startInNamespace(runner, namespace, process.execPath, clientArgs(spec), {
    // A hard ceiling so a wedged client cannot hang the suite: every request's own timeout, plus start-up.
    timeoutMs: CLIENT_START_MS + spec.count * ((spec.timeoutMs ?? 2000) + (spec.intervalMs ?? 0)),
  });
  const result = await proc.exited;
  if (result.code !== 0)
    throw new Error(`traffic client in ${namespace} exited ${result.code}: ${result.stderr.trim()}`);
  return parseOutcomes(result.stdout);
}

/** Traffic that runs in the background until stopped (or `spec.count` requests, a safety bound). */
export interface BackgroundTraffic {
  /** Outcomes so far, read from the client's output file. */
  outcomes(): RequestOutcome[];
  /** Asks the client to stop after its current request; resolves with every outcome. */
  stop(): Promise<RequestOutcome[]>;
}

export function startTraffic(
  runner: CommandRunner,
  namespace: string,
  spec: TrafficSpec,
  stateDir: string,
  label: string,
): BackgroundTraffic {
  const out = join(stateDir, `${label}.out`);
  const stopFile = join(stateDir, `${label}.stop`);
  writeFileSync(out, '');
  const proc = startInNamespace(
    runner,
    namespace,
    process.execPath,
    clientArgs(spec, ['--out', out, '--stop-file', stopFile]),
    {
      timeoutMs: CLIENT_START_MS + spec.count * ((spec.timeoutMs ?? 2000) + (spec.intervalMs ?? 0)),
    },
  );
  const read = () =>
    existsSync(out) ? parseOutcomes(readFileSync(out, 'utf8').split('\n').slice(0, -1).join('\n')) : [];
  return {
    outcomes: read,
    async stop() {
      writeFileSync(stopFile, '');
      const result = await proc.exited;
      if (result.code !== 0)
        throw new Error(`traffic client in ${namespace} exited ${result.code}: ${result.stderr.trim()}`);
      return parseOutcomes(result.stdout);
    },
  };
}

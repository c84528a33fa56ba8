// `kube-proxy-ts lab soak`: sustained churn with traffic flowing against the running lab, with optional faults,
// and a report of what users would have felt (src/lab/soak/). Progress goes to stderr; the report to stdout (text
// or JSON), the picture to an SVG file. Exit 0 when every guarantee held, 1 when one did not (or the soak could not
// run), 2 for a bad command line.
import { writeFileSync } from 'node:fs';
import { parseGoDuration } from 'kube-proxy-ts/config/duration.js';
import { choiceFlag, REPORT_OUTPUTS } from 'kube-proxy-ts/cli/choice-flag.js';
import { processOutput, runCommand, UsageError } from 'kube-proxy-ts/cli/command-line.js';
import type { ParsedCommandLine } from 'kube-proxy-ts/cli/command-line.js';
import { readLabState } from '../cluster/state.js';
import { labPaths } from '../cluster/layout.js';
import { hostCommandRunner, hostStreamRunner } from 'kube-proxy-ts/netfilter/command.js';
import { formatReport } from '../soak/report.js';
import { soakSvg } from '../soak/plot.js';
import { checkSoakOptions, runSoak, type SoakOptions } from '../soak/soak.js';

export const LAB_SOAK_USAGE = `Usage: kube-proxy-ts lab soak [flags]

Runs sustained endpoint churn with traffic flowing against the running lab (either mode or layout), with the
faults asked for, and reports what a user of the Services would have seen.

  load:   short TCP connections (one HTTP request each) and UDP requests to ClusterIPs from a pod, and to
          NodePorts from the client host, at --rate; long-lived TCP connections (one request every 250 ms)
  churn:  at --churn changes per second: readiness flips, pods deleted with their grace period, scale up and
          down, rollout restarts (namespace soak; deleted at the end)
  report: requests sent, succeeded and failed by kind (refused, timeout, reset, wrong endpoint: answered by a
          pod that was not a ready or serving endpoint then), network programming latency per node, syncs,
          xtables lock waits, connections that survived each proxy restart, stale UDP conntrack entries

Flags:
  --duration D                  how long the load and churn run (default 60s; Go durations: 90s, 5m)
  --services N                  Services in namespace soak (default 20)
  --churn PER_SECOND            changes per second (default 2)
  --rate REQ_PER_SECOND         short requests per second over all targets (default 50)
  --competing-lock-holder       on every node, hold its xtables lock 400 ms of every 600 ms (another rule writer)
  --restart-proxy-every D       SIGTERM, then SIGKILL, one node's kube-proxy every D (its pod restarts it)
  --apiserver-outage-every D    cut the nodes off the API server for 3 s every D
  --svg FILE                    the picture: requests, failures and pending changes over time (default soak.svg)
  -o, --output text|json        the report's format (default text)
  --state-dir DIR               the lab's state directory

Exit status: 0 every guarantee held (no failed request to a Service that always had a ready endpoint under
graceful churn, every long-lived connection survived the proxy restarts, no stale UDP conntrack entry, no
kube-proxy exit the soak did not cause); 1 one did not, or the soak could not run; 2 a bad command line.
`;

const LAB_SOAK_LINE = {
  name: 'lab soak',
  usage: LAB_SOAK_USAGE,
  options: {
    duration: { type: 'string' },
    services: { type: 'string' },
    churn: { type: 'string' },
    rate: { type: 'string' },
    'competing-lock-holder': { type: 'boolean' },
    'restart-proxy-every': { type: 'string' },
    'apiserver-outage-every': { type: 'string' },
    svg: { type: 'string' },
    output: { type: 'string', short: 'o' },
    'state-dir': { type: 'string' },
  },
} as const;

type SoakFlags = ParsedCommandLine<typeof LAB_SOAK_LINE.options>['values'];

function duration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const d = parseGoDuration(text);
  if (!d.ok) throw new UsageError(`${flag}: ${d.error}`);
  return d.ms;
}

function number(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n))
    throw new UsageError(`${flag} ${JSON.stringify(text)}: not a number`);
  return n;
}

/** The soak the flags ask for; a UsageError names a wrong one. */
function soakOptionsFrom(values: SoakFlags): SoakOptions {
  const restartMs = duration('--restart-proxy-every', values['restart-proxy-every']);
  const outageMs = duration('--apiserver-outage-every', values['apiserver-outage-every']);
  const options: SoakOptions = {
    durationMs: duration('--duration', values.duration) ?? 60_000,
    services: number('--services', values.services, 20),
    churnPerSecond: number('--churn', values.churn, 2),
    ratePerSecond: number('--rate', values.rate, 50),
    competingLockHolder: values['competing-lock-holder'] === true,
    ...(restartMs !== undefined ? { restartProxyEveryMs: restartMs } : {}),
    ...(outageMs !== undefined ? { apiserverOutageEveryMs: outageMs } : {}),
  };
  const bad = checkSoakOptions(options);
  if (bad !== undefined) throw new UsageError(bad);
  return options;
}

export async function labSoakCommand(argv: readonly string[], defaultStateDir: string): Promise<number> {
  return runCommand(LAB_SOAK_LINE, argv, processOutput, ({ values }) => labSoak(values, defaultStateDir));
}

async function labSoak(values: SoakFlags, defaultStateDir: string): Promise<number> {
  const output = choiceFlag('-o', 'output format', REPORT_OUTPUTS, values.output, 'text');
  const options = soakOptionsFrom(values);
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    process.stderr.write('lab soak: needs root, as `lab up` did (it runs load inside the lab namespaces)\n');
    return 1;
  }
  const stateDir = values['state-dir'] ?? defaultStateDir;
  const state = readLabState(labPaths(stateDir).stateFile);
  if (!state.ok) {
    process.stderr.write(
      `lab soak: ${state.missing ? 'no lab is up (kube-proxy-ts lab up)' : state.reason}\n`,
    );
    return 1;
  }
  const started = Date.now();
  try {
    const report = await runSoak(options, {
      stateDir,
      runner: hostCommandRunner,
      streams: hostStreamRunner,
      progress: (line) =>
        void process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}\n`),
      // The lab process cuts its nodes off the API server for a moment when sent SIGUSR2 (`lab up`).
      apiOutage: () => process.kill(state.state.pid, 'SIGUSR2'),
    });
    const svg = values.svg ?? 'soak.svg';
    writeFileSync(svg, soakSvg(report));
    process.stderr.write(`lab soak: picture in ${svg}\n`);
    process.stdout.write(output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return report.guarantees.ok ? 0 : 1;
  } catch (e) {
    process.stderr.write(`lab soak: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
}

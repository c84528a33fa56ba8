// `kube-proxy-ts doctor [--metrics-url URL] [-o text|json]`: parses flags, gathers what the checks read (the
// agent's /metrics, /configz and /healthz; the cluster's Services and EndpointSlices when asked), runs
// inspect/doctor and prints the findings. Exit 0 all ok, 1 a warning, 2 a failure (3 for a usage error, so that a
// script can tell a bad command line from a sick node).
import {
  DEFAULT_HEALTHZ_URL,
  DEFAULT_METRICS_URL,
  fetchMetrics,
  fetchSettings,
  fetchText,
} from '../inspect/doctor/agent-endpoints.js';
import { DOCTOR_CHECKS } from '../inspect/doctor/checks/index.js';
import { runDoctor } from '../inspect/doctor/runner.js';
import type { DoctorReport } from '../inspect/doctor/runner.js';
import type { AgentSettings, DoctorContext, Severity } from '../inspect/doctor/types.js';
import type { CommandRunner } from '../netfilter/command.js';
import { hostCommandRunner } from '../netfilter/command.js';
import { clusterView } from '../inspect/doctor/cluster-view.js';
import { CLUSTER_SOURCE_OPTIONS, loadClusterObjects, loadGivenClusterObjects } from './cluster-objects.js';
import { choiceFlag, optionalChoiceFlag, REPORT_OUTPUTS } from './choice-flag.js';
import { OUTPUT_OPTION, processOutput, runCommand, UsageError } from './command-line.js';
import type { FlagValues } from './command-line.js';
import { PROXY_MODES } from '../config/proxy-mode.js';

export const DOCTOR_USAGE = `Usage: kube-proxy-ts doctor [flags]

Run on a node (as root, in the node's network namespace): checks the proxy and the kernel the way a runbook for
sync trouble would (seed 003: xtables lock contention during endpoint churn), and prints one finding per check
with its severity (ok, warn, fail; skipped when a check could not look, with why), the evidence and the remedy.
Exit status: 0 all ok (or skipped), 1 a warning, 2 a failure.

Checks:
${DOCTOR_CHECKS.map((c) => `  ${c.id.padEnd(24)} ${c.title}`).join('\n')}

Flags:
  --metrics-url URL        the agent's metrics (default ${DEFAULT_METRICS_URL}; /configz beside it)
  --healthz-url URL        the agent's health check (default ${DEFAULT_HEALTHZ_URL})
  --proxy-mode MODE        nftables or iptables, when /configz cannot be read
  -f, --filename FILE      the cluster's Services and EndpointSlices (for stale-udp-conntrack), as render reads them
  --kubeconfig FILE        read them from the API server instead; with neither, from the API server the running
                           agent uses (the kubeconfig its /configz names)
  -o, --output text|json   output format (default text)
The xtables lock file is $XTABLES_LOCKFILE if set, else /run/xtables.lock, as iptables itself decides.
`;

export interface DoctorIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly runner: CommandRunner;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly now: () => number;
}

const defaultIO: DoctorIO = {
  ...processOutput,
  runner: hostCommandRunner,
  env: process.env,
  now: () => Date.now(),
};

const MARK = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL', skipped: 'skip' } as const;

export function formatDoctorReport(r: DoctorReport): string {
  const lines: string[] = [];
  for (const f of r.findings) {
    lines.push(`[${MARK[f.severity]}] ${f.id}: ${f.summary}`);
    for (const e of f.evidence) lines.push(`         ${e}`);
    if (f.remedy !== '') lines.push(`       → ${f.remedy}`);
  }
  const count = (s: Severity): number => r.findings.filter((f) => f.severity === s).length;
  lines.push(
    '',
    `${count('fail')} failing, ${count('warn')} warning, ${count('ok')} ok, ${count('skipped')} skipped`,
  );
  return `${lines.join('\n')}\n`;
}

const DOCTOR_LINE = {
  name: 'doctor',
  usage: DOCTOR_USAGE,
  // 1 and 2 are findings (a warning, a failure).
  usageExit: 3,
  options: {
    'metrics-url': { type: 'string' },
    'healthz-url': { type: 'string' },
    'proxy-mode': { type: 'string' },
    ...CLUSTER_SOURCE_OPTIONS,
    ...OUTPUT_OPTION,
  },
} as const;

export async function doctorCommand(argv: readonly string[], io: DoctorIO = defaultIO): Promise<number> {
  return runCommand(DOCTOR_LINE, argv, io, ({ values }) => doctor(values, io));
}

async function doctor(values: FlagValues<typeof DOCTOR_LINE>, io: DoctorIO): Promise<number> {
  const output = choiceFlag('-o', 'output format', REPORT_OUTPUTS, values.output, 'text');
  const modeFlag = optionalChoiceFlag('--proxy-mode', 'mode', PROXY_MODES, values['proxy-mode']);
  const metricsURL = values['metrics-url'] ?? DEFAULT_METRICS_URL;
  const healthzURL = values['healthz-url'] ?? DEFAULT_HEALTHZ_URL;
  if (!URL.canParse(metricsURL) || !URL.canParse(healthzURL))
    throw new UsageError('--metrics-url/--healthz-url: not a URL');
  const [metrics, healthz, fetched] = await Promise.all([
    fetchMetrics(metricsURL),
    fetchText(healthzURL),
    fetchSettings(metricsURL),
  ]);
  let settings: AgentSettings | undefined = fetched;
  if (modeFlag !== undefined)
    settings = settings
      ? { ...settings, mode: modeFlag }
      : { mode: modeFlag, syncPeriodSeconds: 30, minSyncPeriodSeconds: 1, localhostNodePorts: true };
  const cluster = await doctorCluster(values, settings?.kubeconfig, io);
  if (cluster === 'failed') return 3;
  const ctx: DoctorContext = {
    runner: io.runner,
    now: io.now(),
    metricsURL,
    metrics,
    healthzURL,
    healthz,
    ...(settings ? { settings } : {}),
    xtablesLockFile: io.env.XTABLES_LOCKFILE ?? '/run/xtables.lock',
    cluster,
  };
  const report = await runDoctor(ctx);
  io.stdout(
    output === 'json'
      ? `${JSON.stringify({ findings: report.findings, exitCode: report.exitCode }, null, 2)}\n`
      : formatDoctorReport(report),
  );
  return report.exitCode;
}

/**
 * The cluster stale-udp-conntrack reads: from -f or --kubeconfig when given (a failure there is the command line's,
 * exit 3), else from the API server the running agent uses, through the kubeconfig its /configz names (a failure
 * there skips the check, naming the file and what went wrong).
 */
async function doctorCluster(
  values: FlagValues<typeof DOCTOR_LINE>,
  agentKubeconfig: string | undefined,
  io: DoctorIO,
): Promise<DoctorContext['cluster'] | 'failed'> {
  const given = values.filename ?? values.kubeconfig;
  if (given !== undefined) {
    const objects = await loadGivenClusterObjects(values, 'doctor', { stderr: io.stderr });
    if (objects === 'failed' || objects === undefined) return 'failed';
    return clusterView(
      objects,
      values.filename !== undefined ? `the file ${given}` : `the kubeconfig ${given}`,
    );
  }
  if (agentKubeconfig === undefined)
    return {
      unavailable:
        'needs the cluster’s Services and EndpointSlices: -f FILE or --kubeconfig FILE, or a running agent whose /configz names its kubeconfig',
    };
  const objects = await loadClusterObjects({ kubeconfig: agentKubeconfig }, 'doctor', { stderr: io.stderr });
  if (typeof objects === 'string')
    return { unavailable: `the agent’s kubeconfig ${agentKubeconfig} (from its /configz): ${objects}` };
  return clusterView(objects, `the agent’s kubeconfig ${agentKubeconfig} (from its /configz)`);
}

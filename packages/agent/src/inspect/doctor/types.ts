// The shape every doctor check shares: a finding with an id, a severity, the evidence it saw (numbers, the
// process, the rule) and the remedy as the exact command to run. Checks read their inputs from one context that
// the CLI fills (the agent's HTTP endpoints, and commands run in the node's network namespace), so a test can
// point the same checks at a namespace it made.
import type { ProxyMode } from '../../config/proxy-mode.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { IPFamily } from '../../model/ip.js';
import type { ServicePort } from '../../model/service-port.js';
import type { CommandRunner } from '../../netfilter/command.js';
import type { MetricSamples } from '../prometheus.js';

/** A finding's verdict; `skipped`: the check could not look (its input was missing), so it says nothing either way. */
export type Severity = 'ok' | 'warn' | 'fail' | 'skipped';

export interface Finding {
  readonly id: string;
  readonly severity: Severity;
  /** One line: what the check found. */
  readonly summary: string;
  /** What it is based on: one fact per line. */
  readonly evidence: readonly string[];
  /** What to do, with the exact command; empty when all is well (and when skipped: the summary says why). */
  readonly remedy: string;
}

/** An HTTP answer from the agent, or why there was none. */
export type Fetched = { readonly status: number; readonly body: string } | { readonly error: string };

/** What the agent's /configz says, reduced to what the checks need (seconds). */
export interface AgentSettings {
  readonly mode: ProxyMode;
  readonly syncPeriodSeconds: number;
  readonly minSyncPeriodSeconds: number;
  readonly localhostNodePorts: boolean;
  /** ipvs.strictARP (ipvs mode then also needs arp_ignore and arp_announce). */
  readonly strictARP?: boolean;
  /** The agent's kubeconfig (clientConnection.kubeconfig), when it names one: where doctor reads the cluster. */
  readonly kubeconfig?: string;
}

/** The cluster's Services and endpoints per family (from the API or a file), for stale-udp-conntrack. */
export interface ClusterView {
  /** Where the objects came from, as evidence: the file, or the kubeconfig (and whose it is). */
  readonly source: string;
  readonly families: readonly {
    readonly family: IPFamily;
    readonly serviceMap: ReadonlyMap<string, ServicePort>;
    readonly endpointsMap: ReadonlyMap<string, readonly Endpoint[]>;
  }[];
}

export interface DoctorContext {
  /** Runs commands in the node's network namespace (sysctl, nft, iptables-save, conntrack, ps, stat). */
  readonly runner: CommandRunner;
  /** Milliseconds since the epoch. */
  readonly now: number;
  readonly metricsURL: string;
  readonly metrics: MetricSamples | { readonly error: string };
  readonly healthzURL: string;
  readonly healthz: Fetched;
  /** From /configz (or flags when the agent is not reachable); undefined when unknown. */
  readonly settings?: AgentSettings;
  /** The xtables lock file iptables uses: $XTABLES_LOCKFILE, else /run/xtables.lock. */
  readonly xtablesLockFile: string;
  /** The cluster, or why there is none to read. */
  readonly cluster: ClusterView | { readonly unavailable: string };
}

/** What a check's run returns: its finding before the runner files it under the check's id. */
export type CheckOutcome = Omit<Finding, 'id'>;

export interface DoctorCheck {
  readonly id: string;
  /** What it looks at, for --help and the docs. */
  readonly title: string;
  run(ctx: DoctorContext): Promise<CheckOutcome>;
}

export function finding(
  severity: Severity,
  summary: string,
  evidence: readonly string[],
  remedy = '',
): CheckOutcome {
  return { severity, summary, evidence, remedy };
}

/** A check that could not run: `skipped`, never `ok`, with the reason as its summary. */
export function skipped(why: string): CheckOutcome {
  return { severity: 'skipped', summary: why, evidence: [], remedy: '' };
}

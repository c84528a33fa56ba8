// The datapath bench (`npm run bench`'s `datapath` section, KPTS_BENCH_MODES=datapath alone): what each rule set
// costs a packet. A client namespace opens new TCP connections through a node namespace, where the agent's own
// backends have programmed N Services × 2 endpoints from the model (bench/workload.ts's BenchCluster, as the other
// sections feed them), to random ClusterIPs; the endpoints are two pod namespaces (bench/datapath-plan.ts has the
// address plan). Per row, on a fresh topology:
// - baseline: the client to a pod's own address through the node, before any rule is loaded;
// - Service: connections to ClusterIPs drawn uniformly from all N Services (the same draw for every mode);
// - non-Service: the baseline's traffic again with the rule set loaded (what the rules cost all traffic).
// Each is KPTS_BENCH_DATAPATH_CONNECTIONS (2,000) connections, one at a time, in KPTS_BENCH_DATAPATH_ROUNDS (4)
// client runs pooled, each after 200 untimed; p50/p99 of the connect time and connections per second.
// Settings: KPTS_BENCH_DATAPATH_SIZES (default 100,1000; the run adds 10000,30000);
// KPTS_BENCH_DATAPATH_MODES (nftables, nftables-flat, iptables-legacy, iptables-nft); iptables-nft stops at
// KPTS_BENCH_DATAPATH_IPTABLES_NFT_MAX Services (1,000), as the sync bench's does; KPTS_BENCH_DATAPATH_HOT (see
// HOT below); KPTS_BENCH_DATAPATH_RT=0 (see clientCommand); KPTS_BENCH_DATAPATH_PLOT (bench-results/datapath.svg).
// Needs root, `ip`, nft and iptables; touches no namespace but its own.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { IptablesBackend } from 'kube-proxy-ts/backends/iptables/backend.js';
import { DEFAULT_IPTABLES_EXTRAS } from 'kube-proxy-ts/backends/iptables/render.js';
import { NftablesBackend } from 'kube-proxy-ts/backends/nftables/backend.js';
import { NFTABLES_LAYOUT_BY_NAME } from 'kube-proxy-ts/backends/nftables/layouts.js';
import { nodePortAddressesFor } from 'kube-proxy-ts/model/nodeport-addresses.js';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { commandInvoker, NftCommandExecutor } from 'kube-proxy-ts/netfilter/nft/executor.js';
import type { ProxyBackend } from 'kube-proxy-ts/sync/backend.js';
import { inNamespace, runChecked } from '@kube-proxy-ts/netns/exec.js';
import { addAddress, addRoute, addVethPair } from '@kube-proxy-ts/netns/link.js';
import { createNamespace, deleteNamespace, sweepNamespaces } from '@kube-proxy-ts/netns/namespace.js';
import { setSysctl } from '@kube-proxy-ts/netns/sysctl.js';
import type { ConnectRun, DatapathRow } from './datapath-plan.js';
import {
  BACKEND_PORT,
  DATAPATH_BACKLOG,
  DATAPATH_ENDPOINTS_PER_SERVICE,
  DATAPATH_PLAN,
  datapathMarkdown,
  pooled,
  datapathTable,
  SERVICE_PORT,
  serviceTargets,
  trafficStats,
} from './datapath-plan.js';
import { writeDatapathPlot } from './datapath-plot.js';
import { benchClock, SETTLE_MS } from './measure.js';
import { BenchCluster, NFTABLES_BENCH_NODE } from './workload.js';

const host = hostCommandRunner;
const CLIENT_SCRIPT = fileURLToPath(new URL('./datapath-client.js', import.meta.url));
const SERVER_SCRIPT = fileURLToPath(new URL('./datapath-server.js', import.meta.url));
const WARMUP = 200;
/**
 * KPTS_BENCH_DATAPATH_HOT=k: dial only the first k Services' ClusterIPs, all N loaded (the rows' mode says so).
 * Against the uniform draw it tells a lookup that grows with N from a path that is only colder in the caches.
 */
const HOT =
  process.env.KPTS_BENCH_DATAPATH_HOT === undefined ? undefined : Number(process.env.KPTS_BENCH_DATAPATH_HOT);
/** Client runs per column (KPTS_BENCH_DATAPATH_ROUNDS), pooled: see runRow. */
const ROUNDS = Math.max(1, Number(process.env.KPTS_BENCH_DATAPATH_ROUNDS ?? '4'));

/** Starts bench/datapath-server.ts in `pod`; resolves once it listens, rejects if it exits first. */
function startServer(pod: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', pod, process.execPath, SERVER_SCRIPT, String(BACKEND_PORT)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.setEncoding('utf8');
    child.stdout.once('data', () => resolve(child));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`datapath server in ${pod} exited with ${code}`)));
  });
}

/**
 * The client's command: under a real-time priority (`chrt --fifo 10`) unless KPTS_BENCH_DATAPATH_RT=0, so the
 * machine's other work does not preempt it between connect() and its wake-up (on a busy host that is most of the
 * p99). The packets' kernel path runs in its context (veth hands them on in the sender's softirq), so it helps
 * every row alike; it never spins, so it takes no CPU from anyone between connections.
 */
function clientCommand(): [string, string[]] {
  if (process.env.KPTS_BENCH_DATAPATH_RT === '0') return [process.execPath, [CLIENT_SCRIPT]];
  return ['chrt', ['--fifo', '10', process.execPath, CLIENT_SCRIPT]];
}

/** A mode: a backend that programs the node namespace through `commands`. */
interface DatapathMode {
  readonly key: string;
  readonly label: string;
  readonly maxServices?: number;
  backend(commands: CommandRunner, lockFile: string): ProxyBackend;
}

function nftablesMode(key: string, layout: 'upstream' | 'flat'): DatapathMode {
  return {
    key,
    label: key,
    backend: (commands) =>
      new NftablesBackend({
        node: NFTABLES_BENCH_NODE,
        commands,
        clock: benchClock,
        layout: NFTABLES_LAYOUT_BY_NAME[layout],
        executor: new NftCommandExecutor({ family: 'ip', table: 'kube-proxy' }, commandInvoker(commands)),
      }),
  };
}

function iptablesMode(variant: 'legacy' | 'nft', maxServices?: number): DatapathMode {
  return {
    key: `iptables-${variant}`,
    label: `iptables (${variant})`,
    ...(maxServices === undefined ? {} : { maxServices }),
    backend: (commands, lockFile) =>
      new IptablesBackend({
        // iptables mode's defaults, as bench/iptables.ts programs the node: NodePorts on every address.
        node: {
          ...NFTABLES_BENCH_NODE,
          nodePortAddresses: nodePortAddressesFor('IPv4', null).value,
          serviceCIDRs: [],
        },
        commands,
        clock: benchClock,
        // As bench/iptables.ts sets them (randomFully on); one sync, so the stale-chain scan's period is moot.
        iptables: { ...DEFAULT_IPTABLES_EXTRAS, randomFully: true, variant, lockFile },
      }),
  };
}

const MODES: readonly DatapathMode[] = [
  nftablesMode('nftables', 'upstream'),
  nftablesMode('nftables-flat', 'flat'),
  iptablesMode('legacy'),
  iptablesMode('nft', Number(process.env.KPTS_BENCH_DATAPATH_IPTABLES_NFT_MAX ?? '1000')),
];

function listFromEnv(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Every namespace of this run starts with it, so an interrupted run can sweep its own and nothing else. */
const RUN_PREFIX = `kpts${randomBytes(3).toString('hex')}-dp`;
let rowNumber = 0;

/** On SIGINT/SIGTERM: remove this run's namespaces (the row's `finally` would not run), then exit. */
function sweepOnSignal(): () => void {
  const onSignal = (): void => {
    void sweepNamespaces(host, RUN_PREFIX).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/** The namespaces of one row: client, node, two pods, with their links, routes and servers. */
class Topology {
  private readonly servers: ChildProcess[] = [];
  private readonly created: string[] = [];
  private constructor(readonly prefix: string) {}

  get client(): string {
    return `${this.prefix}-client`;
  }
  get node(): string {
    return `${this.prefix}-node`;
  }
  pod(k: number): string {
    return `${this.prefix}-pod${k}`;
  }

  static async create(): Promise<Topology> {
    const t = new Topology(`${RUN_PREFIX}${rowNumber++}`);
    try {
      await t.build();
      return t;
    } catch (e) {
      await t.remove();
      throw e;
    }
  }

  private async namespace(name: string): Promise<void> {
    await createNamespace(host, name);
    this.created.push(name);
  }

  private async build(): Promise<void> {
    const plan = DATAPATH_PLAN;
    await this.namespace(this.node);
    await setSysctl(host, this.node, 'net.ipv4.ip_forward', 1);
    await this.namespace(this.client);
    await addVethPair(
      host,
      { namespace: this.node, name: 'client' },
      { namespace: this.client, name: 'eth0' },
    );
    const c = plan.client;
    await addAddress(host, this.node, 'client', `${c.nodeAddress}/${c.prefixLength}`);
    await addAddress(host, this.client, 'eth0', `${c.address}/${c.prefixLength}`);
    await addRoute(host, this.client, { to: 'default', via: c.nodeAddress });
    for (const [k, p] of plan.pods.entries()) {
      const pod = this.pod(k);
      await this.namespace(pod);
      await addVethPair(host, { namespace: this.node, name: `pod${k}` }, { namespace: pod, name: 'eth0' });
      await addAddress(host, this.node, `pod${k}`, `${p.nodeAddress}/${p.prefixLength}`);
      await addAddress(host, pod, 'eth0', `${p.podAddress}/${p.prefixLength}`);
      await addRoute(host, pod, { to: 'default', via: p.nodeAddress });
      for (const cidr of p.localPrefixes) {
        // The pod answers for every endpoint address in the prefix (a local route: any address in it is its own).
        await runChecked(host, `own ${cidr} in ${pod}`, 'ip', [
          '-n',
          pod,
          'route',
          'add',
          'local',
          cidr,
          'dev',
          'lo',
        ]);
        await addRoute(host, this.node, { to: cidr, via: p.podAddress });
      }
      await setSysctl(host, pod, 'net.core.somaxconn', DATAPATH_BACKLOG);
      this.servers.push(await startServer(pod));
    }
  }

  /** The client dials `targets` in order (see bench/datapath-client.ts). */
  async dial(targets: readonly string[], port: number): Promise<ConnectRun> {
    const out = await runChecked(
      inNamespace(host, this.client),
      `datapath client in ${this.client}`,
      ...clientCommand(),
      { stdin: JSON.stringify({ targets, port, warmup: WARMUP }) },
    );
    return JSON.parse(out) as ConnectRun;
  }

  async remove(): Promise<void> {
    // deleteNamespace ends every process inside (the servers) before it deletes the namespace.
    this.servers.splice(0);
    for (const ns of this.created.splice(0).reverse()) await deleteNamespace(host, ns);
  }
}

/**
 * One (mode, size) on a fresh topology: baseline, rules loaded, then Service and non-Service traffic in turns.
 * Each column is ROUNDS client runs of count/ROUNDS connections, pooled; after the load the two kinds of traffic
 * alternate, so a burst of the machine's other work lands on both rather than on one.
 */
async function runRow(mode: DatapathMode, services: number, count: number): Promise<DatapathRow> {
  const topo = await Topology.create();
  const lockFile = join(tmpdir(), `${topo.prefix}-xtables.lock`);
  const per = Math.ceil(count / ROUNDS);
  const direct = Array.from({ length: per }, () => DATAPATH_PLAN.directTarget);
  try {
    // The previous row's namespaces are freed by the kernel in the background; start after that.
    await sleep(SETTLE_MS);
    const baseline: ConnectRun[] = [];
    for (let r = 0; r < ROUNDS; r++) baseline.push(await topo.dial(direct, BACKEND_PORT));
    const cluster = new BenchCluster(NFTABLES_BENCH_NODE.nodeName, DATAPATH_ENDPOINTS_PER_SERVICE);
    const backend = mode.backend(inNamespace(host, topo.node), lockFile);
    const t0 = performance.now();
    cluster.load(services);
    await backend.sync(cluster.snapshot, cluster.checkout());
    const loadMs = performance.now() - t0;
    await sleep(SETTLE_MS);
    const targets = serviceTargets(Math.min(services, HOT ?? services), per * ROUNDS);
    const service: ConnectRun[] = [];
    const nonService: ConnectRun[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      service.push(await topo.dial(targets.slice(r * per, (r + 1) * per), SERVICE_PORT));
      nonService.push(await topo.dial(direct, BACKEND_PORT));
    }
    return {
      mode: HOT === undefined ? mode.label : `${mode.label}, ${HOT} hot`,
      services,
      loadMs,
      service: trafficStats(pooled(service)),
      baseline: trafficStats(pooled(baseline)),
      nonService: trafficStats(pooled(nonService)),
    };
  } finally {
    await topo.remove();
    rmSync(lockFile, { force: true });
  }
}

/** The section: every selected mode at every size, then the table, its Markdown and the plot. */
export async function runDatapathBench(): Promise<DatapathRow[]> {
  const sizes = listFromEnv('KPTS_BENCH_DATAPATH_SIZES', '100,1000')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0)
    .sort((a, b) => a - b);
  const keys = listFromEnv('KPTS_BENCH_DATAPATH_MODES', MODES.map((m) => m.key).join(','));
  const count = Number(process.env.KPTS_BENCH_DATAPATH_CONNECTIONS ?? '2000');
  const modes = MODES.filter((m) => keys.includes(m.key));
  const load = (): string =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`\ndatapath: load average before ${load()}`);
  const rows: DatapathRow[] = [];
  const skipped: string[] = [];
  const stopSweeping = sweepOnSignal();
  try {
    for (const n of sizes) {
      for (const m of modes) {
        if (n > (m.maxServices ?? Infinity)) {
          skipped.push(`${m.label} ${n}`);
          continue;
        }
        const row = await runRow(m, n, count);
        process.stderr.write(`datapath ${m.label} ${n}: p50 ${row.service.p50Us.toFixed(1)} µs\n`);
        rows.push(row);
      }
    }
  } finally {
    stopSweeping();
  }
  const order = (r: DatapathRow): number => modes.findIndex((m) => r.mode.startsWith(m.label));
  rows.sort((a, b) => order(a) - order(b) || a.services - b.services);
  console.log(
    `datapath: new TCP connections, client → node → pod, ${count} per column in ${ROUNDS} runs, each after ` +
      `${WARMUP} untimed, one at a time (Service and non-Service runs alternate); connect() → established, µs. ` +
      `${DATAPATH_ENDPOINTS_PER_SERVICE} endpoints per Service. baseline: the pod's own address before any rule; non-Service: the same with the rules loaded; load: the first sync. ` +
      `load average after ${load()}`,
  );
  console.log(datapathTable(rows));
  if (skipped.length > 0) console.log(`skipped (above the mode's cap): ${skipped.join(', ')}`);
  console.log(`\n${datapathMarkdown(rows)}`);
  const plot = writeDatapathPlot(rows, process.env.KPTS_BENCH_DATAPATH_PLOT ?? 'bench-results/datapath.svg');
  if (plot !== undefined) console.log(`\nplot of the datapath p50: ${plot}`);
  return rows;
}

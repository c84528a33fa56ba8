// `kube-proxy-ts [flags]`: the node agent, started as upstream's kube-proxy is (cmd/kube-proxy/app/server.go):
// load and validate the configuration (refusing to start, with every problem named, when it is wrong), clean up
// the other mode's rules, wait for this node's Node, start the health and metrics servers, follow Services and
// EndpointSlices, and sync through one proxier per IP family. SIGTERM stops it and leaves the rules in place.
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, hostname as osHostname, networkInterfaces, release as osRelease } from 'node:os';
import { IptablesBackend } from '../backends/iptables/backend.js';
import { NftablesBackend, nftFamilyOf } from '../backends/nftables/backend.js';
import { stateFile } from '../backends/nftables/state.js';
import { NFTABLES_LAYOUT_BY_NAME } from '../backends/nftables/layouts.js';
import { NFTABLES_LAYOUT_DESCRIPTIONS } from '../config/nftables-layout.js';
import {
  earlyRequest,
  flagUsage,
  formatProblem,
  loadProxyConfig,
  parseProxyFlags,
  serializeProxyConfig,
  watchConfigFile,
} from '../config/index.js';
import type { ProxyConfig, ProxyOptions } from '../config/index.js';
import { createApiClient } from '../kube/api-client.js';
import type { ApiClient } from '../kube/api-client.js';
import { loadClientConfig } from '../kube/client-config.js';
import { NodeEventWriter } from '../kube/events.js';
import type { Node, ServiceCIDR } from '../api/objects.js';
import type { KubeObject } from '../kube/object-identity.js';
import type { Reflector, ReflectorTiming } from '../kube/reflector.js';
import { waitForNode } from '../kube/wait-for-node.js';
import { nodeAddressFamilies, nodeIPs as nodeIPsOf, nodePodCIDRs } from '../model/node-facts.js';
import type { NodeAddressFamilies } from '../model/node-facts.js';
import {
  endpointSliceReflector,
  nodeReflector,
  SERVICE_CIDRS,
  serviceCIDRReflector,
  serviceReflector,
} from '../kube/watches.js';
import { sliceRemnant } from '../model/endpoint-slice-cache.js';
import type { IPFamily } from '../model/ip.js';
import { hostCommandRunner } from '../netfilter/command.js';
import type { NftExecutors } from '../netfilter/nft/choose-executor.js';
import { chooseNftExecutors } from '../netfilter/nft/choose-executor.js';
import { IptablesClient } from '../netfilter/iptables/client.js';
import { supportsRandomFully } from '../netfilter/iptables/variant.js';
import type { CommandRunner } from '../netfilter/command.js';
import { ConntrackReconciler } from '../netfilter/conntrack/executor.js';
import { applyConntrackSysctls } from '../netfilter/conntrack/sysctls.js';
import { createMetricsServer } from '../server/metrics-server.js';
import type { CreateServerResult } from '../server/retrying-server.js';
import { createProxyMetrics, NFACCT_COUNTERS, type PrometheusProxyMetrics } from '../server/metrics.js';
import { NfacctClient } from '../netfilter/nfacct.js';
import { createProxyHealthServer } from '../server/proxy-health-server.js';
import { ProxyHealth } from '../server/proxy-health.js';
import { ServiceHealthServers } from '../server/service-health.js';
import { ensureSysctl, ROUTE_LOCALNET } from '../netfilter/sysctl.js';
import { localhostNodePortsActive } from '../backends/iptables/render.js';
import { nodePortIPs } from '../model/nodeport-addresses.js';
import type { NodeNetworkConfig, ProxyBackend } from '../sync/backend.js';
import { OtherModeCleanup } from '../sync/mode-switch.js';
import { removeAllModes, removeOtherModes } from './mode-leftovers.js';
import {
  checkIPVSRequirements,
  hostModuleReadings,
  IPVS_DEPRECATION,
} from '../backends/ipvs/requirements.js';
import { IpvsBackend } from '../backends/ipvs/backend.js';
import { setUpIpvsNode } from '../backends/ipvs/node-setup.js';
import type { IpvsHandle } from '../netfilter/ipvs/types.js';
import type { Clock } from '../util/clock.js';
import { configzDocument } from '../config/configz.js';
import type { ProxyMode } from '../config/proxy-mode.js';
import { systemClock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { nodeNetworkConfig } from '../sync/node-network.js';
import { Proxier } from '../sync/proxier.js';
import { processLogger } from './logging.js';
import { VERSION, versionText } from './version.js';
import { errorMessage } from '../util/error-message.js';

export interface RunDeps {
  readonly commands: CommandRunner;
  readonly readFile: (path: string) => string;
  readonly hostname: () => string;
}

const defaultDeps: RunDeps = {
  commands: hostCommandRunner,
  readFile: (p) => readFileSync(p, 'utf8'),
  hostname: () => osHostname(),
};

export async function runCommand(argv: readonly string[], deps: RunDeps = defaultDeps): Promise<number> {
  // --help and --version answer even when the configuration is broken.
  const early = earlyRequest(parseProxyFlags(argv));
  if (early === 'help') {
    process.stdout.write(`Usage: kube-proxy-ts [flags]\n\n${flagUsage()}\n`);
    return 0;
  }
  if (early !== undefined) {
    process.stdout.write(await versionText(early === 'version-raw', deps.commands));
    return 0;
  }
  const loaded = loadProxyConfig(argv, { readFile: deps.readFile, hostname: deps.hostname });
  for (const w of loaded.warnings) process.stderr.write(`kube-proxy-ts: warning: ${w}\n`);
  if (!loaded.ok) {
    process.stderr.write('kube-proxy-ts: refusing to start; nothing was programmed:\n');
    for (const p of loaded.errors) process.stderr.write(`  ${formatProblem(p)}\n`);
    return 1;
  }
  const { config, options } = loaded;
  if (options.writeConfigTo !== undefined) {
    writeFileSync(options.writeConfigTo, serializeProxyConfig(config));
    process.stderr.write(`kube-proxy-ts: wrote the effective configuration to ${options.writeConfigTo}\n`);
    return 0;
  }
  const logger = processLogger({ format: config.logging.format, verbosity: config.logging.verbosity });
  if (options.cleanup) return cleanupAll(deps.commands, logger);
  // Upstream's --init-only does the privileged set-up (sysctls) and exits, for an init container. We have no
  // separate init phase yet: say so and exit, rather than start the whole agent in what is meant to be an init step.
  if (options.initOnly) {
    logger.warn(
      '--init-only: kube-proxy-ts has no separate initialisation phase; exiting without doing anything',
    );
    return 0;
  }
  return new Agent(config, options, deps, logger).run();
}

/** --cleanup: remove every rule of every mode; non-zero if anything could not be removed (upstream). */
async function cleanupAll(commands: CommandRunner, logger: Logger): Promise<number> {
  const reports = await removeAllModes(commands);
  for (const r of reports) {
    for (const e of r.errors) logger.error(`${r.mode} cleanup failed`, { error: e });
    logger.info(`${r.mode} cleanup done`, { removed: r.removed.length });
  }
  return reports.every((r) => r.errors.length === 0) ? 0 : 1;
}

/**
 * Test-only, not a supported setting: KPTS_TEST_REFLECTOR_WATCHDOG_MS shortens the reflectors' silence watchdog
 * (150 s by default, src/kube/reflector.ts) so that the e2e tests can show recovery from an API server that goes
 * silent without closing in seconds rather than minutes. Ignored unless it is a positive integer.
 */
export const TEST_WATCHDOG_ENV = 'KPTS_TEST_REFLECTOR_WATCHDOG_MS';

function testReflectorTiming(): { watchdogMs?: number } {
  const raw = process.env[TEST_WATCHDOG_ENV];
  const ms = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(ms) && ms > 0 ? { watchdogMs: ms } : {};
}

/** This host's interface addresses with prefix, for NodePort address matching. */
function hostInterfaces(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    out.set(
      name,
      (addrs ?? []).filter((a) => a.cidr !== null).map((a) => a.cidr as string),
    );
  }
  return out;
}

/** What every family's proxier is built from. */
interface ProxierInputs {
  readonly node: Node;
  readonly addresses: NodeAddressFamilies;
  readonly interfaces: Map<string, string[]>;
  readonly metrics: PrometheusProxyMetrics;
  readonly health: ProxyHealth;
  readonly conntrack: ConntrackReconciler;
  readonly nfacctCounters: readonly string[];
}

class Agent {
  private readonly clock = systemClock;
  private readonly proxiers: Proxier[] = [];
  private readonly reflectors: Pick<Reflector<KubeObject>, 'stop'>[] = [];
  private readonly closers: (() => Promise<void> | void)[] = [];
  private exitCode: number | undefined;
  private wake: (() => void) | undefined;
  /** nftables mode: how nft is reached (start() decides, once). */
  private nftExecutors: NftExecutors | undefined;
  /** ipvs mode: IPVS in this network namespace, opened once for both families. */
  private ipvs: IpvsHandle | undefined;
  /** The Node as last seen: a change of its IPs (or pod CIDRs, with detectLocalMode NodeCIDR) restarts us. */
  private knownNode: Node | undefined;

  constructor(
    private readonly config: ProxyConfig,
    private readonly options: ProxyOptions,
    private readonly deps: RunDeps,
    private readonly logger: Logger,
  ) {}

  private stop(code: number, why: string): void {
    if (this.exitCode !== undefined) return;
    this.logger.info(why, { exitCode: code });
    this.exitCode = code;
    this.wake?.();
  }

  async run(): Promise<number> {
    const { config, options, logger } = this;
    logger.info('starting kube-proxy-ts', { version: VERSION, mode: config.mode, nodeName: config.nodeName });
    const onSignal = (sig: string): void => this.stop(0, `received ${sig}; stopping (rules stay in place)`);
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
    try {
      await this.start(config, options);
      if (this.exitCode === undefined) await new Promise<void>((resolve) => (this.wake = resolve));
    } catch (error) {
      logger.error('fatal', { error: errorMessage(error) });
      this.exitCode ??= 1;
    }
    await this.shutdown();
    return this.exitCode ?? 0;
  }

  private async shutdown(): Promise<void> {
    for (const r of this.reflectors) await r.stop();
    for (const p of this.proxiers) await p.stop();
    for (const close of this.closers.reverse()) await close();
  }

  /**
   * Upstream's order (server.go): the config file watched, the API client, the servers, the Node waited for, the
   * sysctls, one proxier per family, then the informers; the other mode's rules go after the first syncs.
   */
  private async start(config: ProxyConfig, options: ProxyOptions): Promise<void> {
    this.watchConfigFile(options);
    if (config.mode === 'ipvs') await this.checkIPVS(config);
    const client = this.apiClient(config, options);
    this.nftExecutors = this.chooseNftExecutors(config, options);
    // iptables mode counts INVALID drops and localhost NodePort packets in nfacct objects, as upstream does.
    const nfacct = config.mode === 'iptables' ? new NfacctClient(this.deps.commands) : undefined;
    const metrics = createProxyMetrics({
      mode: config.mode,
      ...(nfacct !== undefined ? { nfacctReader: (name: string) => nfacct.packets(name) } : {}),
    });
    const health = new ProxyHealth({ clock: this.clock, syncPeriodMs: config.syncPeriodMs, metrics });
    this.startServers(config, metrics, health);

    const node = await this.waitForNode(config, client, health);
    if (node === undefined) return;
    const addresses = nodeAddressFamilies(config.bindAddress, nodeIPsOf(node));
    this.logger.info('node IPs', { nodeIPs: addresses.ips, families: addresses.families });
    await this.applyConntrackSysctls(config);
    const nfacctCounters = nfacct === undefined ? [] : await this.nfacctCounters(nfacct);
    const conntrack = new ConntrackReconciler({
      runner: this.deps.commands,
      clock: this.clock,
      logger: this.logger,
      metrics,
    });
    const interfaces = hostInterfaces();
    for (const family of addresses.families) {
      const proxier = await this.createProxier(family, {
        node,
        addresses,
        interfaces,
        metrics,
        health,
        conntrack,
        nfacctCounters,
      });
      proxier.onNode(node);
      this.proxiers.push(proxier);
    }
    for (const p of this.proxiers) p.start();
    this.followServicesAndSlices(config, client);
    // Upstream's birth cry once the informers run (server.go): an Event on the Node, in the background.
    const events = new NodeEventWriter({
      client,
      clock: this.clock,
      logger: this.logger,
      nodeName: config.nodeName,
      hostname: this.deps.hostname(),
    });
    void events.starting();
    if (config.mode === 'ipvs')
      void events.write({
        type: 'Warning',
        reason: 'IPVSDeprecation',
        action: 'StartKubeProxy',
        note: IPVS_DEPRECATION,
      });
    this.cleanUpOtherModeAfterFirstSyncs(config.mode);
  }

  /**
   * ipvs mode: upstream's deprecation warning, then what the node must have (kernel modules, ipset), checked before
   * anything is programmed; a node without them stops here with every missing part named.
   */
  private async checkIPVS(config: ProxyConfig): Promise<void> {
    this.logger.warn(IPVS_DEPRECATION);
    const problem = await checkIPVSRequirements({
      scheduler: config.ipvs.scheduler,
      commands: this.deps.commands,
      readings: hostModuleReadings(osRelease()),
    });
    if (problem !== undefined) throw new Error(problem);
    const ipvs = await setUpIpvsNode(
      {
        scheduler: config.ipvs.scheduler,
        strictARP: config.ipvs.strictARP,
        tcpTimeoutSeconds: Math.floor(config.ipvs.tcpTimeoutMs / 1000),
        tcpFinTimeoutSeconds: Math.floor(config.ipvs.tcpFinTimeoutMs / 1000),
        udpTimeoutSeconds: Math.floor(config.ipvs.udpTimeoutMs / 1000),
      },
      this.logger,
    );
    this.ipvs = ipvs;
    this.closers.push(() => ipvs.close());
  }

  /** The config file changing makes the process exit, as upstream does: the DaemonSet restarts it with the new one. */
  private watchConfigFile(options: ProxyOptions): void {
    if (options.configFile === undefined) return;
    const watched = watchConfigFile(options.configFile, (event) =>
      this.stop(
        1,
        `configuration file ${options.configFile} changed (${event.kind}); exiting to be restarted`,
      ),
    );
    if (watched.ok) this.closers.push(() => watched.watcher.close());
    else
      this.logger.warn('cannot watch the configuration file', {
        file: options.configFile,
        error: watched.error,
      });
  }

  private apiClient(config: ProxyConfig, options: ProxyOptions): ApiClient {
    const clientConfig = loadClientConfig({
      kubeconfig: options.kubeconfig ?? config.clientConnection.kubeconfig,
      master: options.master,
      qps: config.clientConnection.qps,
      burst: config.clientConnection.burst,
    });
    if (!clientConfig.ok) {
      const e = clientConfig.error;
      throw new Error(`${e.file ? `${e.file}: ` : ''}${e.field ? `${e.field}: ` : ''}${e.message}`);
    }
    for (const w of clientConfig.config.warnings) this.logger.warn(w);
    this.logger.info('API server', {
      server: clientConfig.config.server.toString(),
      via: clientConfig.config.description,
    });
    return createApiClient(clientConfig.config, { clock: this.clock });
  }

  /** How nftables mode reaches nft, decided once for both families (each backend gets its own executor by it). */
  private chooseNftExecutors(config: ProxyConfig, options: ProxyOptions): NftExecutors | undefined {
    if (config.mode !== 'nftables') return undefined;
    const chosen = chooseNftExecutors(options.nftExecutor, this.deps.commands);
    if ('error' in chosen) throw new Error(chosen.error);
    this.logger.info('nftables executor', { executor: chosen.kind, reason: chosen.reason });
    return chosen;
  }

  /** The healthz and metrics servers (each off with an empty bind address); a server's fatal error stops us. */
  private startServers(config: ProxyConfig, metrics: PrometheusProxyMetrics, health: ProxyHealth): void {
    const { logger, clock } = this;
    const fatal = (what: string) => (error: { message: string }) => this.stop(1, `${what}: ${error.message}`);
    const started = (s: CreateServerResult): void => {
      if (!s.ok) throw new Error(s.error);
      void s.server.start();
      this.closers.push(() => s.server.stop());
    };
    if (config.healthzBindAddress !== '')
      started(
        createProxyHealthServer({
          bindAddress: config.healthzBindAddress,
          health,
          clock,
          logger,
          hardFail: config.bindAddressHardFail,
          onFatal: fatal('healthz server'),
        }),
      );
    if (config.metricsBindAddress !== '')
      started(
        createMetricsServer({
          bindAddress: config.metricsBindAddress,
          registry: metrics.registry,
          mode: config.mode,
          // Upstream's object, as upstream prints it; what kube-proxy-ts adds (the nftables layout, a flag) apart.
          configz: () => configzDocument(config),
          configzExtension: () => this.configzExtension(),
          logger,
          clock,
          hardFail: config.bindAddressHardFail,
          onFatal: fatal('metrics server'),
        }),
      );
  }

  private configzExtension(): Record<string, string> {
    const executors = this.nftExecutors;
    return {
      nftablesLayout: this.options.nftablesLayout,
      nftablesLayoutDescription: NFTABLES_LAYOUT_DESCRIPTIONS[this.options.nftablesLayout],
      nftExecutor: this.options.nftExecutor,
      nftablesStateDir: this.options.nftablesStateDir ?? '',
      ...(executors !== undefined
        ? { nftExecutorInUse: executors.kind, nftExecutorReason: executors.reason }
        : {}),
    };
  }

  /**
   * The Node: followed for topology labels and eligibility, and waited for (up to 5 minutes). Undefined when the
   * agent was stopped meanwhile.
   */
  private async waitForNode(
    config: ProxyConfig,
    client: ApiClient,
    health: ProxyHealth,
  ): Promise<Node | undefined> {
    let lookAgain = (): void => {};
    const nodes = nodeReflector(config.nodeName, {
      client,
      clock: this.clock,
      timing: testReflectorTiming(),
      logger: this.logger.child({ resource: 'node' }),
      handlers: {
        onAdd: (n) => (this.onNode(n, health), lookAgain()),
        onUpdate: (_o, n) => (this.onNode(n, health), lookAgain()),
        onDelete: () => this.stop(1, `node ${config.nodeName} was deleted; exiting`),
      },
    });
    this.reflectors.push(nodes);
    nodes.start();
    this.logger.info('waiting for the Node object', { nodeName: config.nodeName });
    const waited = await waitForNode(config.nodeName, {
      clock: this.clock,
      lookup: (name) => nodes.get(name),
      requirePodCIDRs: config.detectLocalMode === 'NodeCIDR',
      subscribe: (f) => ((lookAgain = f), () => (lookAgain = () => {})),
    });
    if (!waited.ok) throw new Error(`node ${config.nodeName}: ${waited.reason}`);
    if (this.exitCode !== undefined) return undefined;
    this.knownNode = waited.node;
    health.syncNode(waited.node);
    return waited.node;
  }

  /** Each conntrack sysctl on its own: a zero (or false) leaves that one alone, as upstream does. */
  private async applyConntrackSysctls(config: ProxyConfig): Promise<void> {
    const c = config.conntrack;
    const sysctls = await applyConntrackSysctls(
      {
        maxPerCore: c.maxPerCore,
        min: c.min,
        tcpEstablishedTimeoutSeconds: c.tcpEstablishedTimeoutMs / 1000,
        tcpCloseWaitTimeoutSeconds: c.tcpCloseWaitTimeoutMs / 1000,
        tcpBeLiberal: c.tcpBeLiberal,
        udpTimeoutSeconds: c.udpTimeoutMs / 1000,
        udpStreamTimeoutSeconds: c.udpStreamTimeoutMs / 1000,
      },
      { cpus: cpus().length, logger: this.logger },
    );
    for (const p of sysctls.problems) this.logger.warn('conntrack sysctl', { problem: p });
  }

  /** The counters that exist go into the rules; where the kernel has no nfacct the rules go without them. */
  private async nfacctCounters(nfacct: NfacctClient): Promise<string[]> {
    const counters: string[] = [];
    for (const name of Object.values(NFACCT_COUNTERS)) {
      const problem = await nfacct.ensure(name);
      if (problem === undefined) counters.push(name);
      else this.logger.info('nfacct counter not available; its rule and metric are left out', { problem });
    }
    return counters;
  }

  /** One family's proxier over its backend; the primary family's also owns the Services' health-check servers. */
  private async createProxier(family: IPFamily, shared: ProxierInputs): Promise<Proxier> {
    const { config, logger, clock } = this;
    const { node, addresses, metrics, health } = shared;
    const { config: network, problems } = nodeNetworkConfig({
      family,
      nodeName: config.nodeName,
      nodeIPs: addresses.ips,
      detectLocalMode: config.detectLocalMode,
      clusterCIDRs: config.detectLocal.clusterCIDRs,
      podCIDRs: nodePodCIDRs(node),
      bridgeInterface: config.detectLocal.bridgeInterface,
      interfaceNamePrefix: config.detectLocal.interfaceNamePrefix,
      nodePortAddresses: config.nodePortAddresses,
      masqueradeAll: config.masqueradeAll,
      masqueradeBit: config.masqueradeBit,
      hostInterfaces: shared.interfaces,
    });
    for (const p of problems) logger.warn('ignored', { ipFamily: family, problem: p });
    const flog = logger.child({ ipFamily: family });
    let serviceHealth: ServiceHealthServers | undefined;
    if (family === addresses.primary) {
      // Upstream binds each health-check port on the node IPs nodePortAddresses admits (all when it admits all).
      const nodeAddresses = network.nodePortAddresses.matchAll
        ? []
        : nodePortIPs(network.nodePortAddresses, network.hostInterfaces);
      const servers = new ServiceHealthServers({ proxyHealth: health, logger, nodeAddresses });
      this.closers.push(() => servers.close());
      serviceHealth = servers;
    }
    const { backend, canary } = await this.createBackend(family, network, shared, flog);
    return new Proxier({
      family,
      nodeName: config.nodeName,
      backend,
      clock,
      metrics,
      logger: flog,
      minSyncPeriod: config.minSyncPeriodMs,
      syncPeriod: config.syncPeriodMs,
      featureGates: config.gates,
      health,
      // Upstream's dual-stack metaproxier lets the primary family own the health-check servers.
      ...(serviceHealth !== undefined ? { serviceHealth } : {}),
      conntrack: shared.conntrack,
      ...(canary ? { canary } : {}),
    });
  }

  private async createBackend(
    family: IPFamily,
    network: NodeNetworkConfig,
    shared: ProxierInputs,
    flog: Logger,
  ): Promise<{ backend: ProxyBackend; canary?: () => Promise<boolean> }> {
    const { config, clock } = this;
    const { commands } = this.deps;
    const common = {
      node: network,
      commands,
      clock,
      metrics: shared.metrics,
      logger: flog,
      featureGates: config.gates,
    };
    if (config.mode === 'ipvs') return { backend: await this.ipvsBackend(network, common) };
    if (config.mode === 'nftables')
      return {
        backend: new NftablesBackend({
          ...common,
          layout: NFTABLES_LAYOUT_BY_NAME[this.options.nftablesLayout],
          ...(this.options.nftablesStateDir
            ? { statePath: stateFile(this.options.nftablesStateDir, nftFamilyOf(family)) }
            : {}),
          ...(this.nftExecutors !== undefined ? { nftExecutors: this.nftExecutors } : {}),
        }),
      };
    const iptablesOptions = {
      variant: 'auto' as const,
      localhostNodePorts: config.iptables.localhostNodePorts,
      nfacctCounters: shared.nfacctCounters,
      randomFully: await this.iptablesRandomFully(commands, family),
      conntrackTCPBeLiberal: this.tcpBeLiberal(),
      syncPeriodMs: config.syncPeriodMs,
    };
    const ipt = new IptablesBackend({ ...common, iptables: iptablesOptions });
    if (localhostNodePortsActive(network, iptablesOptions)) {
      // Localhost NodePorts DNAT 127.0.0.1 to a pod; the kernel routes such packets only with route_localnet.
      const r = await ensureSysctl(ROUTE_LOCALNET, 1);
      if (r.kind === 'failed') flog.error('localhost NodePorts will not work', { problem: r.problem });
      else if (r.kind === 'written') flog.info('Set sysctl', { path: r.path, from: r.from, to: r.to });
    }
    return { backend: ipt, canary: () => ipt.checkCanary() };
  }

  private async ipvsBackend(
    network: NodeNetworkConfig,
    common: {
      readonly commands: CommandRunner;
      readonly clock: Clock;
      readonly logger: Logger;
      readonly metrics: PrometheusProxyMetrics;
    },
  ): Promise<IpvsBackend> {
    const { config } = this;
    if (this.ipvs === undefined) throw new Error('ipvs mode: IPVS was not set up');
    return new IpvsBackend({
      ...common,
      node: network,
      ipvs: this.ipvs,
      featureGates: config.gates,
      ipvsOptions: {
        scheduler: config.ipvs.scheduler,
        excludeCIDRs: config.ipvs.excludeCIDRs,
        randomFully: await this.iptablesRandomFully(common.commands, network.family),
      },
    });
  }

  /** The Service and EndpointSlice informers, each event handed to every family's proxier. */
  private followServicesAndSlices(config: ProxyConfig, client: ApiClient): void {
    const { logger, clock, proxiers } = this;
    const timing = { resyncPeriodMs: config.configSyncPeriodMs, ...testReflectorTiming() };
    const services = serviceReflector({
      client,
      clock,
      timing,
      logger: logger.child({ resource: 'services' }),
      handlers: {
        onAdd: (s) => proxiers.forEach((p) => p.onServiceAdd(s)),
        onUpdate: (o, s) => proxiers.forEach((p) => p.onServiceUpdate(o, s)),
        onDelete: (s) => proxiers.forEach((p) => p.onServiceDelete(s)),
        onSynced: () => {
          logger.info('Caches are synced', { controller: 'service config' });
          proxiers.forEach((p) => p.onServicesSynced());
        },
      },
    });
    const slices = endpointSliceReflector({
      client,
      clock,
      timing,
      // The trackers keep what they built of each slice; the store keeps only what a removal needs.
      keep: sliceRemnant,
      logger: logger.child({ resource: 'endpointslices' }),
      handlers: {
        onAdd: (s) => proxiers.forEach((p) => p.onEndpointSliceAdd(s)),
        onUpdate: (o, s) => proxiers.forEach((p) => p.onEndpointSliceUpdate(o, s)),
        onDelete: (s) => proxiers.forEach((p) => p.onEndpointSliceDelete(s)),
        onSynced: () => {
          logger.info('Caches are synced', { controller: 'endpoint slice config' });
          proxiers.forEach((p) => p.onEndpointSlicesSynced());
        },
      },
    });
    this.reflectors.push(services, slices);
    // Upstream's informers say these at the default verbosity; operators grep the logs for them.
    for (const controller of ['service config', 'endpoint slice config'])
      logger.info('Waiting for caches to sync', { controller });
    services.start();
    slices.start();
    if (config.mode === 'nftables') void this.followServiceCIDRs(client, timing, proxiers);
  }

  /**
   * The other mode's rules (upstream platformCleanup) go only once this mode has programmed every family, so a
   * switch never leaves the node without Service rules (src/sync/mode-switch.ts says why both may coexist).
   */
  private cleanUpOtherModeAfterFirstSyncs(mode: ProxyMode): void {
    const { logger, proxiers } = this;
    const otherMode = new OtherModeCleanup(
      proxiers.map((p) => p.family),
      () => this.cleanupOtherMode(mode),
    );
    for (const p of proxiers) {
      p.onSync((e) => {
        otherMode.onSync({ family: p.family, ok: e.ok, full: e.full });
        if (!e.ok) return;
        logger.v(1, () => ({
          msg: 'sync done',
          fields: { ipFamily: p.family, full: e.full, ms: e.finishedAt - e.startedAt },
        }));
      });
    }
  }

  /**
   * nftables mode drops traffic to unallocated ClusterIPs of the service ranges: follow the ServiceCIDR objects when
   * the API server serves them (asked once; older servers answer 404, and no such drop is programmed, as upstream).
   */
  private async followServiceCIDRs(
    client: ApiClient,
    timing: Partial<ReflectorTiming>,
    proxiers: readonly Proxier[],
  ): Promise<void> {
    const { logger, clock } = this;
    let served = false;
    try {
      const res = await client.get(SERVICE_CIDRS.path, { limit: '1' }, AbortSignal.timeout(30_000));
      res.body.destroy();
      served = res.status === 200;
    } catch (e) {
      logger.info('cannot tell whether the API server serves ServiceCIDRs; not following them', {
        error: String(e),
      });
      return;
    }
    if (!served) {
      logger.info(
        'the API server does not serve ServiceCIDRs (networking.k8s.io/v1); no drop of unallocated ClusterIPs',
      );
      return;
    }
    if (this.exitCode !== undefined) return;
    const objects = new Map<string, ServiceCIDR>();
    // After the first complete list, every change is handed on at once: the ranges change rarely.
    let synced = false;
    const changed = (): void => {
      if (!synced) return;
      const all = [...objects.values()];
      for (const p of proxiers) p.onServiceCIDRs(all);
    };
    const key = (o: ServiceCIDR): string => o.metadata.name ?? '';
    const reflector = serviceCIDRReflector({
      client,
      clock,
      timing,
      logger: logger.child({ resource: 'servicecidrs' }),
      handlers: {
        onAdd: (o) => (objects.set(key(o), o), changed()),
        onUpdate: (_old, o) => (objects.set(key(o), o), changed()),
        onDelete: (o) => (objects.delete(key(o)), changed()),
        onSynced: () => ((synced = true), changed()),
      },
    });
    this.reflectors.push(reflector);
    reflector.start();
  }

  /** Removes the other modes' leftovers; failures are only logged (the next start tries again). */
  private async cleanupOtherMode(mode: ProxyMode): Promise<void> {
    const { logger } = this;
    try {
      for (const r of await removeOtherModes(mode, this.deps.commands)) {
        for (const e of r.errors) logger.warn(`${r.mode} mode leftovers not removed`, { error: e });
        logger.info(`removed ${r.mode} mode leftovers after the first ${mode} sync`, {
          removed: r.removed.length,
        });
      }
    } catch (e) {
      logger.warn('cleanup of the other modes failed', { error: String(e) });
    }
  }

  /** Node updates: topology labels go to the proxiers; changed node IPs or pod CIDRs make the process exit. */
  private onNode(node: Node, health: ProxyHealth): void {
    const known = this.knownNode;
    health.syncNode(node);
    if (known !== undefined) {
      const before = nodeIPsOf(known).join(',');
      const after = nodeIPsOf(node).join(',');
      if (before !== after) {
        this.stop(1, `node IPs changed from [${before}] to [${after}]; exiting to be restarted`);
        return;
      }
      if (this.config.detectLocalMode === 'NodeCIDR') {
        if (nodePodCIDRs(known).join(',') !== nodePodCIDRs(node).join(',')) {
          this.stop(1, 'node pod CIDRs changed; exiting to be restarted');
          return;
        }
      }
    }
    this.knownNode = node;
    for (const p of this.proxiers) p.onNode(node);
  }

  /** MASQUERADE --random-fully needs iptables ≥ 1.6.2 (upstream checks the same version). */
  private async iptablesRandomFully(commands: CommandRunner, family: IPFamily): Promise<boolean> {
    try {
      const version = await new IptablesClient({
        family,
        commands,
        clock: this.clock,
        variant: 'auto',
      }).version();
      return supportsRandomFully(version);
    } catch (error) {
      this.logger.warn('cannot read the iptables version; not using --random-fully', {
        ipFamily: family,
        error: errorMessage(error),
      });
      return false;
    }
  }

  private tcpBeLiberal(): boolean {
    try {
      return this.deps.readFile('/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal').trim() === '1';
    } catch {
      return false;
    }
  }
}

// What each flag does to the v1alpha1 document (upstream options.go: the flag bindings, processV1Alpha1Flags and
// the deprecated --healthz-port/--metrics-port handling). Flags are applied to the defaulted document, so the
// result is exactly what --write-config-to would have to say to reproduce the run.
import { appendPortIfNeeded } from './host-port.js';
import type { FlagName, FlagValue, ParsedFlags } from './flags.js';
import { problem } from './problems.js';
import type { ConfigProblem } from './problems.js';
import { PROXY_HEALTHZ_PORT, PROXY_METRICS_PORT } from './v1alpha1-defaults.js';
import type { KubeProxyConfigurationV1Alpha1, VModuleEntry } from './v1alpha1-types.js';

export function str(flags: ParsedFlags, name: FlagName): string | undefined {
  const v = flags.values.get(name);
  return v?.kind === 'string' ? v.value : undefined;
}
export function bool(flags: ParsedFlags, name: FlagName): boolean | undefined {
  const v = flags.values.get(name);
  return v?.kind === 'bool' ? v.value : undefined;
}
function num(flags: ParsedFlags, name: FlagName): number | undefined {
  const v = flags.values.get(name);
  return v?.kind === 'number' ? v.value : undefined;
}
function ms(flags: ParsedFlags, name: FlagName): number | undefined {
  const v = flags.values.get(name);
  return v?.kind === 'duration' ? v.ms : undefined;
}
function list(flags: ParsedFlags, name: FlagName): readonly string[] | undefined {
  const v = flags.values.get(name);
  return v?.kind === 'list' ? v.value : undefined;
}
function gates(flags: ParsedFlags): Readonly<Record<string, boolean>> | undefined {
  const v: FlagValue | undefined = flags.values.get('feature-gates');
  return v?.kind === 'gates' ? v.value : undefined;
}
function vmodule(flags: ParsedFlags): readonly VModuleEntry[] | undefined {
  const v = flags.values.get('vmodule');
  return v?.kind === 'vmodule' ? v.value : undefined;
}

/** Applies the configuration flags (used only without --config). Call before applyLoggingFlags. */
export function applyConfigFlags(
  doc: KubeProxyConfigurationV1Alpha1,
  flags: ParsedFlags,
): KubeProxyConfigurationV1Alpha1 {
  const mode = str(flags, 'proxy-mode') ?? doc.mode;
  // --iptables-*-sync-period feed the internal SyncPeriod whenever mode is not ipvs, so they also set nftables'
  // periods; in the file's terms that is the mode's own section.
  const periodSection = mode === 'nftables' ? 'nftables' : mode === 'ipvs' ? undefined : 'iptables';
  const syncPeriod = ms(flags, 'iptables-sync-period');
  const minSyncPeriod = ms(flags, 'iptables-min-sync-period');
  const masqueradeAll = bool(flags, 'masquerade-all');
  const periods = (section: 'iptables' | 'nftables') =>
    periodSection === section
      ? {
          ...(syncPeriod !== undefined ? { syncPeriod } : {}),
          ...(minSyncPeriod !== undefined ? { minSyncPeriod } : {}),
        }
      : {};
  const isIPVS = mode === 'ipvs';

  let next: KubeProxyConfigurationV1Alpha1 = {
    ...doc,
    mode,
    bindAddress: str(flags, 'bind-address') ?? doc.bindAddress,
    healthzBindAddress: str(flags, 'healthz-bind-address') ?? doc.healthzBindAddress,
    metricsBindAddress: str(flags, 'metrics-bind-address') ?? doc.metricsBindAddress,
    bindAddressHardFail: bool(flags, 'bind-address-hard-fail') ?? doc.bindAddressHardFail,
    enableProfiling: bool(flags, 'profiling') ?? doc.enableProfiling,
    showHiddenMetricsForVersion:
      str(flags, 'show-hidden-metrics-for-version') ?? doc.showHiddenMetricsForVersion,
    featureGates: { ...doc.featureGates, ...gates(flags) },
    clientConnection: {
      ...doc.clientConnection,
      contentType: str(flags, 'kube-api-content-type') ?? doc.clientConnection.contentType,
      qps: num(flags, 'kube-api-qps') ?? doc.clientConnection.qps,
      burst: num(flags, 'kube-api-burst') ?? doc.clientConnection.burst,
    },
    iptables: {
      ...doc.iptables,
      ...periods('iptables'),
      masqueradeBit: num(flags, 'iptables-masquerade-bit') ?? doc.iptables.masqueradeBit,
      masqueradeAll: masqueradeAll ?? doc.iptables.masqueradeAll,
      localhostNodePorts: bool(flags, 'iptables-localhost-nodeports') ?? doc.iptables.localhostNodePorts,
    },
    nftables: {
      ...doc.nftables,
      ...periods('nftables'),
      masqueradeAll: masqueradeAll ?? doc.nftables.masqueradeAll,
    },
    ipvs: {
      ...doc.ipvs,
      syncPeriod: (isIPVS ? ms(flags, 'ipvs-sync-period') : undefined) ?? doc.ipvs.syncPeriod,
      minSyncPeriod: (isIPVS ? ms(flags, 'ipvs-min-sync-period') : undefined) ?? doc.ipvs.minSyncPeriod,
      scheduler: str(flags, 'ipvs-scheduler') ?? doc.ipvs.scheduler,
      excludeCIDRs: list(flags, 'ipvs-exclude-cidrs') ?? doc.ipvs.excludeCIDRs,
      strictARP: bool(flags, 'ipvs-strict-arp') ?? doc.ipvs.strictARP,
      tcpTimeout: ms(flags, 'ipvs-tcp-timeout') ?? doc.ipvs.tcpTimeout,
      tcpFinTimeout: ms(flags, 'ipvs-tcpfin-timeout') ?? doc.ipvs.tcpFinTimeout,
      udpTimeout: ms(flags, 'ipvs-udp-timeout') ?? doc.ipvs.udpTimeout,
    },
    detectLocalMode: str(flags, 'detect-local-mode') ?? doc.detectLocalMode,
    clusterCIDR: str(flags, 'cluster-cidr') ?? doc.clusterCIDR,
    detectLocal: {
      bridgeInterface: str(flags, 'pod-bridge-interface') ?? doc.detectLocal.bridgeInterface,
      interfaceNamePrefix: str(flags, 'pod-interface-name-prefix') ?? doc.detectLocal.interfaceNamePrefix,
    },
    nodePortAddresses: list(flags, 'nodeport-addresses') ?? doc.nodePortAddresses,
    oomScoreAdj: num(flags, 'oom-score-adj') ?? doc.oomScoreAdj,
    conntrack: {
      maxPerCore: num(flags, 'conntrack-max-per-core') ?? doc.conntrack.maxPerCore,
      min: num(flags, 'conntrack-min') ?? doc.conntrack.min,
      tcpEstablishedTimeout:
        ms(flags, 'conntrack-tcp-timeout-established') ?? doc.conntrack.tcpEstablishedTimeout,
      tcpCloseWaitTimeout: ms(flags, 'conntrack-tcp-timeout-close-wait') ?? doc.conntrack.tcpCloseWaitTimeout,
      tcpBeLiberal: bool(flags, 'conntrack-tcp-be-liberal') ?? doc.conntrack.tcpBeLiberal,
      udpTimeout: ms(flags, 'conntrack-udp-timeout') ?? doc.conntrack.udpTimeout,
      udpStreamTimeout: ms(flags, 'conntrack-udp-timeout-stream') ?? doc.conntrack.udpStreamTimeout,
    },
    configSyncPeriod: ms(flags, 'config-sync-period') ?? doc.configSyncPeriod,
    portRange: str(flags, 'proxy-port-range') ?? doc.portRange,
  };

  // Deprecated ports: 0 disables the server; another port is added only where the address has none.
  const healthzPort = num(flags, 'healthz-port') ?? PROXY_HEALTHZ_PORT;
  const metricsPort = num(flags, 'metrics-port') ?? PROXY_METRICS_PORT;
  next = {
    ...next,
    healthzBindAddress: healthzPort === 0 ? '' : appendPortIfNeeded(next.healthzBindAddress, healthzPort),
    metricsBindAddress: metricsPort === 0 ? '' : appendPortIfNeeded(next.metricsBindAddress, metricsPort),
  };
  return next;
}

/** Applies the logging flags: they override the file's logging section too. */
export function applyLoggingFlags(
  doc: KubeProxyConfigurationV1Alpha1,
  flags: ParsedFlags,
): { readonly doc: KubeProxyConfigurationV1Alpha1; readonly problems: readonly ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  let verbosity = num(flags, 'v');
  if (verbosity !== undefined && verbosity < 0) {
    problems.push(problem('--v', `must be greater than or equal to 0, got ${verbosity}`));
    verbosity = undefined;
  }
  return {
    doc: {
      ...doc,
      logging: {
        format: str(flags, 'logging-format') ?? doc.logging.format,
        flushFrequency: ms(flags, 'log-flush-frequency') ?? doc.logging.flushFrequency,
        verbosity: verbosity ?? doc.logging.verbosity,
        vmodule: vmodule(flags) ?? doc.logging.vmodule,
      },
    },
    problems,
  };
}

/** The flag that sets each document field, for naming it in problems found in a flags-only configuration. */
const FIELD_FLAGS: ReadonlyArray<readonly [RegExp, FlagName]> = [
  [/^mode$/, 'proxy-mode'],
  [/^bindAddress$/, 'bind-address'],
  [/^healthzBindAddress$/, 'healthz-bind-address'],
  [/^metricsBindAddress$/, 'metrics-bind-address'],
  [/^(iptables|nftables)\.syncPeriod$/, 'iptables-sync-period'],
  [/^(iptables|nftables)\.minSyncPeriod$/, 'iptables-min-sync-period'],
  [/^iptables\.masqueradeBit$/, 'iptables-masquerade-bit'],
  [/^detectLocalMode$/, 'detect-local-mode'],
  [/^detectLocal\.bridgeInterface$/, 'pod-bridge-interface'],
  [/^detectLocal\.interfaceNamePrefix$/, 'pod-interface-name-prefix'],
  [/^clusterCIDR$/, 'cluster-cidr'],
  [/^nodePortAddresses\[\d+\]$/, 'nodeport-addresses'],
  [/^oomScoreAdj$/, 'oom-score-adj'],
  [/^conntrack\.maxPerCore$/, 'conntrack-max-per-core'],
  [/^conntrack\.min$/, 'conntrack-min'],
  [/^conntrack\.tcpEstablishedTimeout$/, 'conntrack-tcp-timeout-established'],
  [/^conntrack\.tcpCloseWaitTimeout$/, 'conntrack-tcp-timeout-close-wait'],
  [/^conntrack\.udpTimeout$/, 'conntrack-udp-timeout'],
  [/^conntrack\.udpStreamTimeout$/, 'conntrack-udp-timeout-stream'],
  [/^configSyncPeriod$/, 'config-sync-period'],
  [/^featureGates/, 'feature-gates'],
  [/^clientConnection\.burst$/, 'kube-api-burst'],
  [/^showHiddenMetricsForVersion$/, 'show-hidden-metrics-for-version'],
  [/^logging\.format$/, 'logging-format'],
  [/^logging\.vmodule/, 'vmodule'],
];

/** Adds the flag that set a problem's field, when that flag was given. */
export function attributeToFlag(p: ConfigProblem, flags: ParsedFlags): ConfigProblem {
  const match = FIELD_FLAGS.find(([pattern, name]) => pattern.test(p.field) && flags.values.has(name));
  return match === undefined ? p : { ...p, flag: `--${match[1]}` };
}

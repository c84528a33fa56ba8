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

/** `base` with the fields the flags gave; a field left undefined (its flag was not given) keeps its value. */
function overlay<T extends object>(base: T, given: { readonly [K in keyof T]?: T[K] | undefined }): T {
  const set = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  return { ...base, ...set };
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
  const periods = (section: 'iptables' | 'nftables') =>
    periodSection === section
      ? {
          syncPeriod: ms(flags, 'iptables-sync-period'),
          minSyncPeriod: ms(flags, 'iptables-min-sync-period'),
        }
      : {};
  const masqueradeAll = bool(flags, 'masquerade-all');
  const isIPVS = mode === 'ipvs';

  let next: KubeProxyConfigurationV1Alpha1 = overlay(doc, {
    mode,
    bindAddress: str(flags, 'bind-address'),
    healthzBindAddress: str(flags, 'healthz-bind-address'),
    metricsBindAddress: str(flags, 'metrics-bind-address'),
    bindAddressHardFail: bool(flags, 'bind-address-hard-fail'),
    enableProfiling: bool(flags, 'profiling'),
    showHiddenMetricsForVersion: str(flags, 'show-hidden-metrics-for-version'),
    featureGates: { ...doc.featureGates, ...gates(flags) },
    clientConnection: overlay(doc.clientConnection, {
      contentType: str(flags, 'kube-api-content-type'),
      qps: num(flags, 'kube-api-qps'),
      burst: num(flags, 'kube-api-burst'),
    }),
    iptables: overlay(doc.iptables, {
      ...periods('iptables'),
      masqueradeBit: num(flags, 'iptables-masquerade-bit'),
      masqueradeAll,
      localhostNodePorts: bool(flags, 'iptables-localhost-nodeports'),
    }),
    nftables: overlay(doc.nftables, { ...periods('nftables'), masqueradeAll }),
    ipvs: overlay(doc.ipvs, {
      syncPeriod: isIPVS ? ms(flags, 'ipvs-sync-period') : undefined,
      minSyncPeriod: isIPVS ? ms(flags, 'ipvs-min-sync-period') : undefined,
      scheduler: str(flags, 'ipvs-scheduler'),
      excludeCIDRs: list(flags, 'ipvs-exclude-cidrs'),
      strictARP: bool(flags, 'ipvs-strict-arp'),
      tcpTimeout: ms(flags, 'ipvs-tcp-timeout'),
      tcpFinTimeout: ms(flags, 'ipvs-tcpfin-timeout'),
      udpTimeout: ms(flags, 'ipvs-udp-timeout'),
    }),
    detectLocalMode: str(flags, 'detect-local-mode'),
    clusterCIDR: str(flags, 'cluster-cidr'),
    detectLocal: overlay(doc.detectLocal, {
      bridgeInterface: str(flags, 'pod-bridge-interface'),
      interfaceNamePrefix: str(flags, 'pod-interface-name-prefix'),
    }),
    nodePortAddresses: list(flags, 'nodeport-addresses'),
    oomScoreAdj: num(flags, 'oom-score-adj'),
    conntrack: overlay(doc.conntrack, {
      maxPerCore: num(flags, 'conntrack-max-per-core'),
      min: num(flags, 'conntrack-min'),
      tcpEstablishedTimeout: ms(flags, 'conntrack-tcp-timeout-established'),
      tcpCloseWaitTimeout: ms(flags, 'conntrack-tcp-timeout-close-wait'),
      tcpBeLiberal: bool(flags, 'conntrack-tcp-be-liberal'),
      udpTimeout: ms(flags, 'conntrack-udp-timeout'),
      udpStreamTimeout: ms(flags, 'conntrack-udp-timeout-stream'),
    }),
    configSyncPeriod: ms(flags, 'config-sync-period'),
    portRange: str(flags, 'proxy-port-range'),
  });

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

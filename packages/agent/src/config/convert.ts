// v1alpha1 ↔ ProxyConfig, the mode-dependent conversion of upstream's v1alpha1/conversion.go: sync periods come
// from ipvs.* for ipvs, nftables.* for nftables and iptables.* otherwise; masqueradeAll from nftables.* for
// nftables and iptables.* otherwise; clusterCIDR is split on ",". The reverse direction writes the chosen values
// back under the mode's section, so a written file reads back to the same ProxyConfig.
import { PROXY_MODES } from './proxy-mode.js';
import { resolveFeatureGates } from './feature-gates.js';
import { problem } from './problems.js';
import type { ConfigProblem } from './problems.js';
import type { ProxyConfig } from './proxy-config.js';
import { defaultV1Alpha1 } from './v1alpha1-defaults.js';
import { DETECT_LOCAL_MODE_SETTINGS, LOGGING_FORMATS } from './v1alpha1-types.js';
import { isOneOf } from './choice.js';
import type { KubeProxyConfigurationV1Alpha1, V1Alpha1ServerSettings } from './v1alpha1-types.js';
import { periodSectionFor } from './validate.js';

/** The server settings alone (a ProxyConfig or a document holds more), to copy them across. */
export function serverSettings(s: V1Alpha1ServerSettings): V1Alpha1ServerSettings {
  return {
    bindAddress: s.bindAddress,
    healthzBindAddress: s.healthzBindAddress,
    metricsBindAddress: s.metricsBindAddress,
    bindAddressHardFail: s.bindAddressHardFail,
    enableProfiling: s.enableProfiling,
    showHiddenMetricsForVersion: s.showHiddenMetricsForVersion,
  };
}

export type ConvertResult =
  | { readonly ok: true; readonly config: ProxyConfig }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

/**
 * Builds the ProxyConfig from a document that validateV1Alpha1 accepted (platform defaults applied). The enum
 * fields are narrowed here once more, so an unvalidated document yields problems rather than a wrong type.
 */
export function toProxyConfig(doc: KubeProxyConfigurationV1Alpha1, nodeName: string): ConvertResult {
  const { mode, detectLocalMode } = doc;
  const format = doc.logging.format;
  if (!isOneOf(PROXY_MODES, mode)) return refuse('mode', mode);
  if (!isOneOf(DETECT_LOCAL_MODE_SETTINGS, detectLocalMode) || detectLocalMode === '') {
    return refuse('detectLocalMode', detectLocalMode);
  }
  if (!isOneOf(LOGGING_FORMATS, format)) return refuse('logging.format', format);
  const periods = doc[periodSectionFor(mode)];
  const masquerade = mode === 'nftables' ? doc.nftables : doc.iptables;
  const config: ProxyConfig = {
    featureGates: { ...doc.featureGates },
    gates: resolveFeatureGates(doc.featureGates).gates,
    clientConnection: { ...doc.clientConnection },
    logging: {
      format,
      flushFrequencyMs: doc.logging.flushFrequency,
      verbosity: doc.logging.verbosity,
      vmodule: doc.logging.vmodule.map((v) => ({ ...v })),
    },
    hostnameOverride: doc.hostnameOverride,
    nodeName,
    ...serverSettings(doc),
    mode,
    syncPeriodMs: periods.syncPeriod,
    minSyncPeriodMs: periods.minSyncPeriod,
    masqueradeAll: masquerade.masqueradeAll,
    masqueradeBit: masquerade.masqueradeBit,
    iptables: {
      masqueradeBit: doc.iptables.masqueradeBit,
      localhostNodePorts: doc.iptables.localhostNodePorts,
    },
    nftables: { masqueradeBit: doc.nftables.masqueradeBit },
    ipvs: {
      scheduler: doc.ipvs.scheduler,
      excludeCIDRs: [...(doc.ipvs.excludeCIDRs ?? [])],
      strictARP: doc.ipvs.strictARP,
      tcpTimeoutMs: doc.ipvs.tcpTimeout,
      tcpFinTimeoutMs: doc.ipvs.tcpFinTimeout,
      udpTimeoutMs: doc.ipvs.udpTimeout,
    },
    detectLocalMode,
    detectLocal: {
      bridgeInterface: doc.detectLocal.bridgeInterface,
      interfaceNamePrefix: doc.detectLocal.interfaceNamePrefix,
      clusterCIDRs: doc.clusterCIDR === '' ? [] : doc.clusterCIDR.split(','),
    },
    nodePortAddresses: [...(doc.nodePortAddresses ?? [])],
    oomScoreAdj: doc.oomScoreAdj,
    conntrack: {
      maxPerCore: doc.conntrack.maxPerCore,
      min: doc.conntrack.min,
      tcpEstablishedTimeoutMs: doc.conntrack.tcpEstablishedTimeout,
      tcpCloseWaitTimeoutMs: doc.conntrack.tcpCloseWaitTimeout,
      tcpBeLiberal: doc.conntrack.tcpBeLiberal,
      udpTimeoutMs: doc.conntrack.udpTimeout,
      udpStreamTimeoutMs: doc.conntrack.udpStreamTimeout,
    },
    configSyncPeriodMs: doc.configSyncPeriod,
  };
  return { ok: true, config };
}

function refuse(field: string, value: string): ConvertResult {
  return { ok: false, problems: [problem(field, `unsupported value ${JSON.stringify(value)}`)] };
}

/** The v1alpha1 document for a ProxyConfig (what --write-config-to writes). */
export function toV1Alpha1(config: ProxyConfig): KubeProxyConfigurationV1Alpha1 {
  const base = defaultV1Alpha1({});
  const chosen = { syncPeriod: config.syncPeriodMs, minSyncPeriod: config.minSyncPeriodMs };
  const section = periodSectionFor(config.mode);
  return {
    ...base,
    featureGates: { ...config.featureGates },
    clientConnection: { ...config.clientConnection },
    logging: {
      format: config.logging.format,
      flushFrequency: config.logging.flushFrequencyMs,
      verbosity: config.logging.verbosity,
      vmodule: config.logging.vmodule,
    },
    hostnameOverride: config.hostnameOverride,
    ...serverSettings(config),
    mode: config.mode,
    iptables: {
      ...base.iptables,
      masqueradeBit: config.iptables.masqueradeBit,
      localhostNodePorts: config.iptables.localhostNodePorts,
      masqueradeAll: config.mode === 'nftables' ? false : config.masqueradeAll,
      ...(section === 'iptables' ? chosen : {}),
    },
    nftables: {
      ...base.nftables,
      masqueradeBit: config.nftables.masqueradeBit,
      masqueradeAll: config.mode === 'nftables' ? config.masqueradeAll : false,
      ...(section === 'nftables' ? chosen : {}),
    },
    ipvs: {
      ...base.ipvs,
      scheduler: config.ipvs.scheduler,
      excludeCIDRs: config.ipvs.excludeCIDRs.length === 0 ? null : config.ipvs.excludeCIDRs,
      strictARP: config.ipvs.strictARP,
      tcpTimeout: config.ipvs.tcpTimeoutMs,
      tcpFinTimeout: config.ipvs.tcpFinTimeoutMs,
      udpTimeout: config.ipvs.udpTimeoutMs,
      ...(section === 'ipvs' ? chosen : {}),
    },
    detectLocalMode: config.detectLocalMode,
    detectLocal: {
      bridgeInterface: config.detectLocal.bridgeInterface,
      interfaceNamePrefix: config.detectLocal.interfaceNamePrefix,
    },
    clusterCIDR: config.detectLocal.clusterCIDRs.join(','),
    nodePortAddresses: config.nodePortAddresses.length === 0 ? null : config.nodePortAddresses,
    oomScoreAdj: config.oomScoreAdj,
    conntrack: {
      maxPerCore: config.conntrack.maxPerCore,
      min: config.conntrack.min,
      tcpEstablishedTimeout: config.conntrack.tcpEstablishedTimeoutMs,
      tcpCloseWaitTimeout: config.conntrack.tcpCloseWaitTimeoutMs,
      tcpBeLiberal: config.conntrack.tcpBeLiberal,
      udpTimeout: config.conntrack.udpTimeoutMs,
      udpStreamTimeout: config.conntrack.udpStreamTimeoutMs,
    },
    configSyncPeriod: config.configSyncPeriodMs,
  };
}

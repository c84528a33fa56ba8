// --write-config-to: the effective configuration as a v1alpha1 YAML document, keys sorted as upstream writes
// them and durations in Go's form ("30s", "1h0m0s"). Written as YAML 1.1, the dialect we read, so that strings
// such as "yes" or "on" come out quoted and read back as strings.
import { stringify } from 'yaml';
import { serverSettings, toV1Alpha1 } from './convert.js';
import { formatGoDuration } from './duration.js';
import type { ProxyConfig } from './proxy-config.js';
import { API_VERSION, KIND } from './v1alpha1-types.js';
import type { KubeProxyConfigurationV1Alpha1 } from './v1alpha1-types.js';

export function serializeProxyConfig(config: ProxyConfig): string {
  return stringify(v1alpha1Document(toV1Alpha1(config)), {
    version: '1.1',
    sortMapEntries: true,
    lineWidth: 0,
  });
}

/** The document as plain JSON-like data, durations as text. */
export function v1alpha1Document(doc: KubeProxyConfigurationV1Alpha1): Record<string, unknown> {
  const d = formatGoDuration;
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    featureGates: { ...doc.featureGates },
    clientConnection: { ...doc.clientConnection },
    logging: {
      format: doc.logging.format,
      flushFrequency: d(doc.logging.flushFrequency),
      verbosity: doc.logging.verbosity,
      ...(doc.logging.vmodule.length > 0 ? { vmodule: doc.logging.vmodule.map((v) => ({ ...v })) } : {}),
    },
    hostnameOverride: doc.hostnameOverride,
    ...serverSettings(doc),
    mode: doc.mode,
    iptables: {
      masqueradeBit: doc.iptables.masqueradeBit,
      masqueradeAll: doc.iptables.masqueradeAll,
      localhostNodePorts: doc.iptables.localhostNodePorts,
      syncPeriod: d(doc.iptables.syncPeriod),
      minSyncPeriod: d(doc.iptables.minSyncPeriod),
    },
    ipvs: {
      syncPeriod: d(doc.ipvs.syncPeriod),
      minSyncPeriod: d(doc.ipvs.minSyncPeriod),
      scheduler: doc.ipvs.scheduler,
      excludeCIDRs: doc.ipvs.excludeCIDRs === null ? null : [...doc.ipvs.excludeCIDRs],
      strictARP: doc.ipvs.strictARP,
      tcpTimeout: d(doc.ipvs.tcpTimeout),
      tcpFinTimeout: d(doc.ipvs.tcpFinTimeout),
      udpTimeout: d(doc.ipvs.udpTimeout),
    },
    nftables: {
      masqueradeBit: doc.nftables.masqueradeBit,
      masqueradeAll: doc.nftables.masqueradeAll,
      syncPeriod: d(doc.nftables.syncPeriod),
      minSyncPeriod: d(doc.nftables.minSyncPeriod),
    },
    winkernel: { ...doc.winkernel },
    detectLocalMode: doc.detectLocalMode,
    detectLocal: { ...doc.detectLocal },
    clusterCIDR: doc.clusterCIDR,
    nodePortAddresses: doc.nodePortAddresses === null ? null : [...doc.nodePortAddresses],
    oomScoreAdj: doc.oomScoreAdj,
    conntrack: {
      maxPerCore: doc.conntrack.maxPerCore,
      min: doc.conntrack.min,
      tcpEstablishedTimeout: d(doc.conntrack.tcpEstablishedTimeout),
      tcpCloseWaitTimeout: d(doc.conntrack.tcpCloseWaitTimeout),
      tcpBeLiberal: doc.conntrack.tcpBeLiberal,
      udpTimeout: d(doc.conntrack.udpTimeout),
      udpStreamTimeout: d(doc.conntrack.udpStreamTimeout),
    },
    configSyncPeriod: d(doc.configSyncPeriod),
    portRange: doc.portRange,
    windowsRunAsService: doc.windowsRunAsService,
  };
}

// /configz as upstream prints it. Upstream registers its *internal* KubeProxyConfiguration with configz
// (cmd/kube-proxy/app/server.go; kubernetes #137426 asks for the versioned type instead), and the internal Go
// types carry no json tags: encoding/json prints the Go field names (`BindAddress`, `IPTables.SyncPeriod`), with
// pointer fields as plain values and durations as Go duration strings. Only the logging block is a versioned type
// with json tags (component-base logs/api/v1), so it keeps its camelCase names. TypeMeta is empty in the internal
// object and omitted.
import { toV1Alpha1 } from './convert.js';
import { formatGoDuration } from './duration.js';
import type { ProxyConfig } from './proxy-config.js';

/** The configz object of kube-proxy's configuration, as upstream serializes it. */
export function configzDocument(config: ProxyConfig): Record<string, unknown> {
  const doc = toV1Alpha1(config);
  const d = formatGoDuration;
  return {
    FeatureGates: { ...doc.featureGates },
    ClientConnection: {
      Kubeconfig: doc.clientConnection.kubeconfig,
      AcceptContentTypes: doc.clientConnection.acceptContentTypes,
      ContentType: doc.clientConnection.contentType,
      QPS: doc.clientConnection.qps,
      Burst: doc.clientConnection.burst,
    },
    Logging: {
      format: doc.logging.format,
      flushFrequency: d(doc.logging.flushFrequency),
      verbosity: doc.logging.verbosity,
      ...(doc.logging.vmodule.length > 0 ? { vmodule: doc.logging.vmodule.map((v) => ({ ...v })) } : {}),
      options: { text: { infoBufferSize: '0' }, json: { infoBufferSize: '0' } },
    },
    HostnameOverride: doc.hostnameOverride,
    BindAddress: doc.bindAddress,
    HealthzBindAddress: doc.healthzBindAddress,
    MetricsBindAddress: doc.metricsBindAddress,
    BindAddressHardFail: doc.bindAddressHardFail,
    EnableProfiling: doc.enableProfiling,
    ShowHiddenMetricsForVersion: doc.showHiddenMetricsForVersion,
    Mode: doc.mode,
    IPTables: {
      MasqueradeBit: doc.iptables.masqueradeBit,
      MasqueradeAll: doc.iptables.masqueradeAll,
      LocalhostNodePorts: doc.iptables.localhostNodePorts,
      SyncPeriod: d(doc.iptables.syncPeriod),
      MinSyncPeriod: d(doc.iptables.minSyncPeriod),
    },
    IPVS: {
      SyncPeriod: d(doc.ipvs.syncPeriod),
      MinSyncPeriod: d(doc.ipvs.minSyncPeriod),
      Scheduler: doc.ipvs.scheduler,
      ExcludeCIDRs: doc.ipvs.excludeCIDRs === null ? null : [...doc.ipvs.excludeCIDRs],
      StrictARP: doc.ipvs.strictARP,
      TCPTimeout: d(doc.ipvs.tcpTimeout),
      TCPFinTimeout: d(doc.ipvs.tcpFinTimeout),
      UDPTimeout: d(doc.ipvs.udpTimeout),
    },
    Winkernel: {
      NetworkName: doc.winkernel.networkName,
      SourceVip: doc.winkernel.sourceVip,
      EnableDSR: doc.winkernel.enableDSR,
      RootHnsEndpointName: doc.winkernel.rootHnsEndpointName,
      ForwardHealthCheckVip: doc.winkernel.forwardHealthCheckVip,
    },
    NFTables: {
      MasqueradeBit: doc.nftables.masqueradeBit,
      MasqueradeAll: doc.nftables.masqueradeAll,
      SyncPeriod: d(doc.nftables.syncPeriod),
      MinSyncPeriod: d(doc.nftables.minSyncPeriod),
    },
    DetectLocalMode: doc.detectLocalMode,
    DetectLocal: {
      BridgeInterface: doc.detectLocal.bridgeInterface,
      InterfaceNamePrefix: doc.detectLocal.interfaceNamePrefix,
    },
    ClusterCIDR: doc.clusterCIDR,
    NodePortAddresses: doc.nodePortAddresses === null ? null : [...doc.nodePortAddresses],
    OOMScoreAdj: doc.oomScoreAdj,
    Conntrack: {
      MaxPerCore: doc.conntrack.maxPerCore,
      Min: doc.conntrack.min,
      TCPEstablishedTimeout: d(doc.conntrack.tcpEstablishedTimeout),
      TCPCloseWaitTimeout: d(doc.conntrack.tcpCloseWaitTimeout),
      TCPBeLiberal: doc.conntrack.tcpBeLiberal,
      UDPTimeout: d(doc.conntrack.udpTimeout),
      UDPStreamTimeout: d(doc.conntrack.udpStreamTimeout),
    },
    ConfigSyncPeriod: d(doc.configSyncPeriod),
    PortRange: doc.portRange,
    WindowsRunAsService: doc.windowsRunAsService,
  };
}

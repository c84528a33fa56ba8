// Upstream's SetDefaults_KubeProxyConfiguration (pkg/proxy/apis/config/v1alpha1/defaults.go), field by field.
// Go's zero values matter: a non-pointer field (a period, qps, burst, a string) that is zero is replaced by its
// default, so `iptables.minSyncPeriod: 0s` in a file means 1s, as upstream; pointer fields (masqueradeBit,
// oomScoreAdj, conntrack maxPerCore/min and TCP timeouts, localhostNodePorts) keep an explicit 0 or false.
import { parseIPSloppy } from '../model/ip.js';
import { appendPortIfNeeded } from './host-port.js';
import type { KubeProxyConfigurationV1Alpha1, PartialV1Alpha1 } from './v1alpha1-types.js';

/** Upstream's fixed ports (pkg/cluster/ports): healthz and metrics. */
export const PROXY_HEALTHZ_PORT = 10256;
export const PROXY_METRICS_PORT = 10249;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** `x || fallback` for Go zero-value defaulting of numbers and strings. */
function orZero<T extends number | string>(value: T | undefined, fallback: T): T {
  return value === undefined || value === 0 || value === '' ? fallback : value;
}

export function defaultV1Alpha1(p: PartialV1Alpha1): KubeProxyConfigurationV1Alpha1 {
  const bindAddress = orZero(p.bindAddress, '0.0.0.0');
  // An IPv6 (or unparsable) bindAddress moves the default listeners to IPv6.
  const ipv4 = parseIPSloppy(bindAddress)?.family === 'IPv4';
  const healthz = p.healthzBindAddress ?? '';
  const metrics = p.metricsBindAddress ?? '';
  return {
    featureGates: { ...stripUndefined(p.featureGates ?? {}) },
    clientConnection: {
      kubeconfig: p.clientConnection?.kubeconfig ?? '',
      acceptContentTypes: p.clientConnection?.acceptContentTypes ?? '',
      contentType: orZero(p.clientConnection?.contentType, 'application/vnd.kubernetes.protobuf'),
      qps: orZero(p.clientConnection?.qps, 5),
      burst: orZero(p.clientConnection?.burst, 10),
    },
    logging: {
      format: orZero(p.logging?.format, 'text'),
      flushFrequency: orZero(p.logging?.flushFrequency, 5 * SECOND),
      verbosity: p.logging?.verbosity ?? 0,
      vmodule: p.logging?.vmodule ?? [],
    },
    hostnameOverride: p.hostnameOverride ?? '',
    bindAddress,
    healthzBindAddress:
      healthz === ''
        ? `${ipv4 ? '0.0.0.0' : '[::]'}:${PROXY_HEALTHZ_PORT}`
        : appendPortIfNeeded(healthz, PROXY_HEALTHZ_PORT),
    metricsBindAddress:
      metrics === ''
        ? `${ipv4 ? '127.0.0.1' : '[::1]'}:${PROXY_METRICS_PORT}`
        : appendPortIfNeeded(metrics, PROXY_METRICS_PORT),
    bindAddressHardFail: p.bindAddressHardFail ?? false,
    enableProfiling: p.enableProfiling ?? false,
    showHiddenMetricsForVersion: p.showHiddenMetricsForVersion ?? '',
    mode: p.mode ?? '',
    iptables: {
      masqueradeBit: p.iptables?.masqueradeBit ?? 14,
      masqueradeAll: p.iptables?.masqueradeAll ?? false,
      localhostNodePorts: p.iptables?.localhostNodePorts ?? true,
      syncPeriod: orZero(p.iptables?.syncPeriod, 30 * SECOND),
      minSyncPeriod: orZero(p.iptables?.minSyncPeriod, 1 * SECOND),
    },
    ipvs: {
      syncPeriod: orZero(p.ipvs?.syncPeriod, 30 * SECOND),
      minSyncPeriod: p.ipvs?.minSyncPeriod ?? 0,
      scheduler: p.ipvs?.scheduler ?? '',
      excludeCIDRs: p.ipvs?.excludeCIDRs ?? null,
      strictARP: p.ipvs?.strictARP ?? false,
      tcpTimeout: p.ipvs?.tcpTimeout ?? 0,
      tcpFinTimeout: p.ipvs?.tcpFinTimeout ?? 0,
      udpTimeout: p.ipvs?.udpTimeout ?? 0,
    },
    nftables: {
      masqueradeBit: p.nftables?.masqueradeBit ?? 14,
      masqueradeAll: p.nftables?.masqueradeAll ?? false,
      syncPeriod: orZero(p.nftables?.syncPeriod, 30 * SECOND),
      minSyncPeriod: orZero(p.nftables?.minSyncPeriod, 1 * SECOND),
    },
    winkernel: {
      networkName: p.winkernel?.networkName ?? '',
      sourceVip: p.winkernel?.sourceVip ?? '',
      enableDSR: p.winkernel?.enableDSR ?? false,
      rootHnsEndpointName: p.winkernel?.rootHnsEndpointName ?? '',
      forwardHealthCheckVip: p.winkernel?.forwardHealthCheckVip ?? false,
    },
    detectLocalMode: p.detectLocalMode ?? '',
    detectLocal: {
      bridgeInterface: p.detectLocal?.bridgeInterface ?? '',
      interfaceNamePrefix: p.detectLocal?.interfaceNamePrefix ?? '',
    },
    clusterCIDR: p.clusterCIDR ?? '',
    nodePortAddresses: p.nodePortAddresses ?? null,
    oomScoreAdj: p.oomScoreAdj ?? -999,
    conntrack: {
      maxPerCore: p.conntrack?.maxPerCore ?? 32 * 1024,
      min: p.conntrack?.min ?? 128 * 1024,
      tcpEstablishedTimeout: p.conntrack?.tcpEstablishedTimeout ?? 24 * HOUR,
      tcpCloseWaitTimeout: p.conntrack?.tcpCloseWaitTimeout ?? 1 * HOUR,
      tcpBeLiberal: p.conntrack?.tcpBeLiberal ?? false,
      udpTimeout: p.conntrack?.udpTimeout ?? 0,
      udpStreamTimeout: p.conntrack?.udpStreamTimeout ?? 0,
    },
    configSyncPeriod: orZero(p.configSyncPeriod, 15 * MINUTE),
    portRange: p.portRange ?? '',
    windowsRunAsService: p.windowsRunAsService ?? false,
  };
}

function stripUndefined(gates: Readonly<Record<string, boolean | undefined>>): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const [name, value] of Object.entries(gates)) if (value !== undefined) out[name] = value;
  return out;
}

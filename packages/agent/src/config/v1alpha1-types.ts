// KubeProxyConfiguration v1alpha1 (k8s.io/kube-proxy/config/v1alpha1), the file format operators keep in the
// kube-proxy ConfigMap. Field names are upstream's, so that a path in a message (`nftables.minSyncPeriod`) is the
// path in the file. Durations are held as milliseconds. Enum-like fields stay plain strings here: this is what
// the file said; validation narrows them (against the `as const` lists below) before ProxyConfig is built.

export const API_VERSION = 'kubeproxy.config.k8s.io/v1alpha1';
export const KIND = 'KubeProxyConfiguration';

/** `mode` values upstream knows; "" means the platform default (iptables on Linux). */
export const PROXY_MODE_SETTINGS = ['', 'iptables', 'ipvs', 'nftables'] as const;
export type ProxyModeSetting = (typeof PROXY_MODE_SETTINGS)[number];

/** `detectLocalMode` values; "" means ClusterCIDR. */
export const DETECT_LOCAL_MODE_SETTINGS = [
  '',
  'ClusterCIDR',
  'NodeCIDR',
  'BridgeInterface',
  'InterfaceNamePrefix',
] as const;
export type DetectLocalModeSetting = (typeof DETECT_LOCAL_MODE_SETTINGS)[number];
export type DetectLocalMode = Exclude<DetectLocalModeSetting, ''>;

/** `logging.format` values (component-base registers text and json). */
export const LOGGING_FORMATS = ['text', 'json'] as const;
export type LoggingFormat = (typeof LOGGING_FORMATS)[number];

export interface V1Alpha1ClientConnection {
  readonly kubeconfig: string;
  readonly acceptContentTypes: string;
  readonly contentType: string;
  readonly qps: number;
  readonly burst: number;
}

export interface VModuleEntry {
  readonly filePattern: string;
  readonly verbosity: number;
}

export interface V1Alpha1Logging {
  readonly format: string;
  /** ms */
  readonly flushFrequency: number;
  readonly verbosity: number;
  readonly vmodule: readonly VModuleEntry[];
}

export interface V1Alpha1IPTables {
  readonly masqueradeBit: number;
  readonly masqueradeAll: boolean;
  readonly localhostNodePorts: boolean;
  /** ms */
  readonly syncPeriod: number;
  /** ms */
  readonly minSyncPeriod: number;
}

export interface V1Alpha1IPVS {
  readonly syncPeriod: number;
  readonly minSyncPeriod: number;
  readonly scheduler: string;
  readonly excludeCIDRs: readonly string[] | null;
  readonly strictARP: boolean;
  readonly tcpTimeout: number;
  readonly tcpFinTimeout: number;
  readonly udpTimeout: number;
}

export interface V1Alpha1NFTables {
  readonly masqueradeBit: number;
  readonly masqueradeAll: boolean;
  readonly syncPeriod: number;
  readonly minSyncPeriod: number;
}

export interface V1Alpha1Conntrack {
  readonly maxPerCore: number;
  readonly min: number;
  /** ms; 0 leaves the sysctl alone */
  readonly tcpEstablishedTimeout: number;
  readonly tcpCloseWaitTimeout: number;
  readonly tcpBeLiberal: boolean;
  readonly udpTimeout: number;
  readonly udpStreamTimeout: number;
}

export interface V1Alpha1DetectLocal {
  readonly bridgeInterface: string;
  readonly interfaceNamePrefix: string;
}

export interface V1Alpha1Winkernel {
  readonly networkName: string;
  readonly sourceVip: string;
  readonly enableDSR: boolean;
  readonly rootHnsEndpointName: string;
  readonly forwardHealthCheckVip: boolean;
}

/** The servers' settings: the same in the document and in ProxyConfig, and copied between them as they are. */
export interface V1Alpha1ServerSettings {
  /** Not bound: a non-unspecified value overrides the primary node IP. */
  readonly bindAddress: string;
  /** "IP:port"; '' disables the healthz server. */
  readonly healthzBindAddress: string;
  /** "IP:port"; '' disables the metrics server. */
  readonly metricsBindAddress: string;
  readonly bindAddressHardFail: boolean;
  readonly enableProfiling: boolean;
  readonly showHiddenMetricsForVersion: string;
}

/** A complete (defaulted) v1alpha1 document, apiVersion and kind aside. */
export interface KubeProxyConfigurationV1Alpha1 extends V1Alpha1ServerSettings {
  readonly featureGates: Readonly<Record<string, boolean>>;
  readonly clientConnection: V1Alpha1ClientConnection;
  readonly logging: V1Alpha1Logging;
  readonly hostnameOverride: string;
  readonly mode: string;
  readonly iptables: V1Alpha1IPTables;
  readonly ipvs: V1Alpha1IPVS;
  readonly nftables: V1Alpha1NFTables;
  readonly winkernel: V1Alpha1Winkernel;
  readonly detectLocalMode: string;
  readonly detectLocal: V1Alpha1DetectLocal;
  readonly clusterCIDR: string;
  readonly nodePortAddresses: readonly string[] | null;
  readonly oomScoreAdj: number;
  readonly conntrack: V1Alpha1Conntrack;
  readonly configSyncPeriod: number;
  readonly portRange: string;
  readonly windowsRunAsService: boolean;
}

type DeepPartial<T> = {
  readonly [K in keyof T]?: T[K] extends readonly unknown[] | null
    ? T[K]
    : T[K] extends object
      ? DeepPartial<T[K]>
      : T[K];
};

/** What a file said: every field optional (absent or null means "not set", as for Go's decoder). */
export type PartialV1Alpha1 = DeepPartial<KubeProxyConfigurationV1Alpha1>;

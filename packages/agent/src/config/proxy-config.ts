// ProxyConfig: the configuration the proxy runs with, after defaults, flags, platform defaults and validation.
// It mirrors upstream's internal type (pkg/proxy/apis/config/types.go): one syncPeriod/minSyncPeriod and one
// masqueradeAll chosen by mode, clusterCIDR split into a list, conntrack and oomScoreAdj as Linux settings.
// Durations are milliseconds (the unit of Clock and the runner). Built only from a validated document.
import type { FeatureGates } from '../model/feature-gates.js';
import type { NftExecutorChoice } from './nft-executor.js';
import type { NftablesLayoutName } from './nftables-layout.js';
import type { ProxyMode } from './proxy-mode.js';
import type {
  DetectLocalMode,
  LoggingFormat,
  V1Alpha1ServerSettings,
  VModuleEntry,
} from './v1alpha1-types.js';

export interface ProxyConfig extends V1Alpha1ServerSettings {
  /** The operator's featureGates as given (kept for --write-config-to). */
  readonly featureGates: Readonly<Record<string, boolean>>;
  /** The gates the model acts on, resolved from featureGates and the defaults. */
  readonly gates: FeatureGates;
  readonly clientConnection: {
    readonly kubeconfig: string;
    readonly acceptContentTypes: string;
    readonly contentType: string;
    readonly qps: number;
    readonly burst: number;
  };
  readonly logging: {
    readonly format: LoggingFormat;
    readonly flushFrequencyMs: number;
    readonly verbosity: number;
    readonly vmodule: readonly VModuleEntry[];
  };
  /** hostnameOverride trimmed and lower-cased; '' when unset. */
  readonly hostnameOverride: string;
  /** The Node this proxy serves: hostnameOverride, else the OS hostname, lower-cased. */
  readonly nodeName: string;
  readonly mode: ProxyMode;
  /** The chosen mode's syncPeriod, ms. */
  readonly syncPeriodMs: number;
  /** The chosen mode's minSyncPeriod, ms. */
  readonly minSyncPeriodMs: number;
  /** The chosen mode's masqueradeAll. */
  readonly masqueradeAll: boolean;
  /** The chosen mode's masqueradeBit (the mark is 1 << bit; see masqueradeMarkFor). */
  readonly masqueradeBit: number;
  readonly iptables: { readonly masqueradeBit: number; readonly localhostNodePorts: boolean };
  readonly nftables: { readonly masqueradeBit: number };
  /** ipvs mode only (upstream's IPVS proxier; deprecated upstream). */
  readonly ipvs: {
    readonly scheduler: string;
    readonly excludeCIDRs: readonly string[];
    readonly strictARP: boolean;
    readonly tcpTimeoutMs: number;
    readonly tcpFinTimeoutMs: number;
    readonly udpTimeoutMs: number;
  };
  readonly detectLocalMode: DetectLocalMode;
  readonly detectLocal: {
    readonly bridgeInterface: string;
    readonly interfaceNamePrefix: string;
    /** clusterCIDR split on ","; at most one per family. */
    readonly clusterCIDRs: readonly string[];
  };
  /** CIDRs, or exactly ["primary"]; [] means every local address (iptables mode only). */
  readonly nodePortAddresses: readonly string[];
  readonly oomScoreAdj: number;
  readonly conntrack: {
    readonly maxPerCore: number;
    readonly min: number;
    readonly tcpEstablishedTimeoutMs: number;
    readonly tcpCloseWaitTimeoutMs: number;
    readonly tcpBeLiberal: boolean;
    readonly udpTimeoutMs: number;
    readonly udpStreamTimeoutMs: number;
  };
  /** Informer resync period, ms. */
  readonly configSyncPeriodMs: number;
}

/** Options that are not configuration: they apply with or without --config. */
export interface ProxyOptions {
  readonly configFile: string | undefined;
  readonly cleanup: boolean;
  readonly initOnly: boolean;
  readonly writeConfigTo: string | undefined;
  readonly master: string | undefined;
  readonly kubeconfig: string | undefined;
  /** --nftables-layout (default upstream). */
  readonly nftablesLayout: NftablesLayoutName;
  /** --nft-executor: auto (the default), cli or library. */
  readonly nftExecutor: NftExecutorChoice;
  /** --nftables-state-dir: where nftables mode leaves its state for the next start; undefined: nowhere. */
  readonly nftablesStateDir?: string | undefined;
}

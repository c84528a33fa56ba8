// One endpoint of a service port as this node sees it (upstream pkg/proxy/endpoint.go).

export interface Endpoint {
  /** Canonical IP (addresses[0] of the slice endpoint). */
  readonly ip: string;
  readonly port: number;
  /** "ip:port", IPv6 as "[ip]:port". Lists are sorted by this string. */
  readonly endpoint: string;
  /** nodeName equals this node's (non-empty) name. */
  readonly isLocal: boolean;
  /** Conditions with upstream's defaults: nil ready ⇒ true, nil serving ⇒ true, nil terminating ⇒ false. */
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly zoneHints: ReadonlySet<string>;
  /** Only filled when node hints are enabled (feature PreferSameTrafficDistribution). */
  readonly nodeHints: ReadonlySet<string>;
}

/** "ip:port", IPv6 bracketed. */
export function endpointString(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

// "host:port" as the configuration spells a bind address (healthzBindAddress, metricsBindAddress): IPv6 hosts are
// bracketed ("[::1]:10249"). Validation of the configuration is src/config's job; this only splits, and says why
// when it cannot.

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export type BindAddressResult =
  { readonly ok: true; readonly value: HostPort } | { readonly ok: false; readonly error: string };

export function parseBindAddress(text: string): BindAddressResult {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!m) return { ok: false, error: `bind address ${JSON.stringify(text)} is not host:port` };
  const port = Number(m[3]);
  if (port < 0 || port > 65535)
    return { ok: false, error: `bind address ${JSON.stringify(text)}: port out of range` };
  const host = m[1] ?? m[2] ?? '';
  // Go's net.Listen takes an empty host as "all addresses".
  return { ok: true, value: { host: host === '' ? '0.0.0.0' : host, port } };
}

/** "host:port", bracketing IPv6 hosts. */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

// kube-proxy's command-line flags (cmd/kube-proxy/app/options.go AddFlags), parsed with pflag's rules: `--flag=v`,
// `--flag v`, booleans as `--flag` or `--flag=false` (never `--flag false`), shorthands `-v 4`, `-v=4`, `-v4`,
// `_` and `-` equivalent in names, `--` ends the flags, and kube-proxy takes no positional arguments. Parsing
// only checks each value's syntax; what a flag does to the configuration is apply-flags.ts's job.
import { parseGoDuration } from './duration.js';
import { problem } from './problems.js';
import type { ConfigProblem } from './problems.js';
import type { VModuleEntry } from './v1alpha1-types.js';

type FlagKind =
  | 'string'
  | 'bool'
  | 'int32'
  | 'float'
  | 'duration'
  | 'stringSlice'
  | 'mapStringBool'
  | 'vmodule'
  | 'version';

/**
 * option: not configuration, always applies. logging: overrides the file's logging even with --config.
 * hostname: --hostname-override, also applies with --config. config: ignored when --config is given.
 */
type FlagGroup = 'option' | 'logging' | 'hostname' | 'config';

interface FlagDef {
  readonly kind: FlagKind;
  readonly group: FlagGroup;
  readonly help: string;
  readonly shorthand?: string;
  readonly deprecated?: string;
}

export const FLAGS = {
  config: { kind: 'string', group: 'option', help: 'The path to the configuration file.' },
  'write-config-to': {
    kind: 'string',
    group: 'option',
    help: 'If set, write the effective configuration to this file and exit.',
  },
  cleanup: {
    kind: 'bool',
    group: 'option',
    help: 'If true cleanup iptables, ipvs and nftables rules and exit.',
  },
  'init-only': {
    kind: 'bool',
    group: 'option',
    help: 'If true, perform privileged initialization steps, then exit.',
  },
  master: {
    kind: 'string',
    group: 'option',
    help: 'The address of the Kubernetes API server (overrides kubeconfig).',
  },
  kubeconfig: {
    kind: 'string',
    group: 'option',
    help: 'Path to kubeconfig file with authorization information.',
  },
  version: {
    kind: 'version',
    group: 'option',
    help: '--version, --version=raw prints version information and quits.',
  },
  help: { kind: 'bool', group: 'option', help: 'help for kube-proxy', shorthand: 'h' },
  'nftables-layout': {
    kind: 'string',
    group: 'option',
    help:
      "kube-proxy-ts only, nftables mode: 'upstream' (default) programs upstream kube-proxy's ruleset, chain for " +
      "chain; 'flat' programs a few shared maps and dispatch chains instead of chains per Service port, so that " +
      'loading and one-endpoint changes take the same time at any cluster size. Not part of the config file; ' +
      'applies with --config too.',
  },
  'nftables-state-dir': {
    kind: 'string',
    group: 'option',
    help:
      'kube-proxy-ts only, nftables mode: a directory where kube-proxy-ts leaves, when it stops, what it needs to ' +
      'trust its table at the next start on this node (the ruleset generation, a digest of the elements it ' +
      'wrote), so that a restart adopts the table instead of flushing and refilling every set and map. It must ' +
      'outlive the process (a hostPath such as /run/kube-proxy-ts). Empty (the default): nothing is left, and a ' +
      'restart refills. Not part of the config file; applies with --config too.',
  },
  'nft-executor': {
    kind: 'string',
    group: 'option',
    help:
      "kube-proxy-ts only, nftables mode: how nft is run. 'auto' (default) works inside this process (it " +
      'programs the network namespace kube-proxy-ts runs in): set elements are written and read over nf_tables ' +
      'netlink, everything else through libnftables, no process per change; it falls back to the nft command ' +
      "when the library does not load. 'cli' always runs the nft command; 'library' refuses to start without " +
      'the library. Not part of the config file; applies with --config too.',
  },

  v: { kind: 'int32', group: 'logging', help: 'number for the log level verbosity', shorthand: 'v' },
  vmodule: {
    kind: 'vmodule',
    group: 'logging',
    help: 'pattern=N,... for file-filtered logging. Accepted and validated as upstream does, and shown in /configz, but kube-proxy-ts logs by one verbosity (--v) for every file: the patterns change nothing.',
  },
  'logging-format': { kind: 'string', group: 'logging', help: 'Sets the log format: "text" or "json".' },
  'log-flush-frequency': {
    kind: 'duration',
    group: 'logging',
    help: 'Maximum number of seconds between log flushes',
  },

  'hostname-override': {
    kind: 'string',
    group: 'hostname',
    help: 'If non-empty, will be used as the name of the Node that kube-proxy is running on.',
  },

  'proxy-mode': {
    kind: 'string',
    group: 'config',
    help: "Which proxy mode to use: 'iptables' or 'nftables'.",
  },
  'bind-address': {
    kind: 'string',
    group: 'config',
    help: "Overrides kube-proxy's idea of what its node's primary IP is (not bound).",
  },
  'healthz-bind-address': {
    kind: 'string',
    group: 'config',
    help: 'The IP address with port for the health check server (default 0.0.0.0:10256); empty disables it.',
  },
  'metrics-bind-address': {
    kind: 'string',
    group: 'config',
    help: 'The IP address with port for the metrics server (default 127.0.0.1:10249); empty disables it.',
  },
  'bind-address-hard-fail': {
    kind: 'bool',
    group: 'config',
    help: 'If true kube-proxy will treat failure to bind to a port as fatal and exit.',
  },
  profiling: {
    kind: 'bool',
    group: 'config',
    help: "Accepted for compatibility and shown in /configz; kube-proxy-ts serves no /debug/pprof (Go's profiler has no Node.js counterpart there): use node --inspect or --cpu-prof instead.",
  },
  'show-hidden-metrics-for-version': {
    kind: 'string',
    group: 'config',
    help: 'The previous version for which you want to show hidden metrics.',
  },
  'feature-gates': {
    kind: 'mapStringBool',
    group: 'config',
    help: 'A set of key=value pairs for feature gates.',
  },
  'kube-api-content-type': {
    kind: 'string',
    group: 'config',
    help: 'Content type of requests sent to apiserver.',
  },
  'kube-api-qps': {
    kind: 'float',
    group: 'config',
    help: 'QPS to use while talking with kubernetes apiserver.',
  },
  'kube-api-burst': {
    kind: 'int32',
    group: 'config',
    help: 'Burst to use while talking with kubernetes apiserver.',
  },
  'iptables-sync-period': {
    kind: 'duration',
    group: 'config',
    help: 'An interval (e.g. "5s", "1m") for refreshing rules in iptables and nftables modes.',
  },
  'iptables-min-sync-period': {
    kind: 'duration',
    group: 'config',
    help: 'The minimum period between rule resyncs in iptables and nftables modes.',
  },
  'iptables-masquerade-bit': {
    kind: 'int32',
    group: 'config',
    help: 'The bit of the fwmark space to mark packets requiring SNAT, in iptables mode. [0, 31].',
  },
  'masquerade-all': { kind: 'bool', group: 'config', help: 'SNAT all traffic sent via Service cluster IPs.' },
  'iptables-localhost-nodeports': {
    kind: 'bool',
    group: 'config',
    help: 'If false, NodePort services are not accepted via localhost (iptables mode only).',
  },
  'detect-local-mode': { kind: 'string', group: 'config', help: 'Mode to use to detect local traffic.' },
  'cluster-cidr': { kind: 'string', group: 'config', help: 'The CIDR range(s) of the pods in the cluster.' },
  'pod-bridge-interface': {
    kind: 'string',
    group: 'config',
    help: 'A bridge interface name (BridgeInterface mode).',
  },
  'pod-interface-name-prefix': {
    kind: 'string',
    group: 'config',
    help: 'An interface name prefix (InterfaceNamePrefix mode).',
  },
  'nodeport-addresses': {
    kind: 'stringSlice',
    group: 'config',
    help: 'CIDRs of node addresses that accept NodePort traffic, or "primary".',
  },
  'oom-score-adj': {
    kind: 'int32',
    group: 'config',
    help: 'The oom-score-adj value for kube-proxy. [-1000, 1000]',
  },
  'conntrack-max-per-core': {
    kind: 'int32',
    group: 'config',
    help: 'Maximum conntrack entries per CPU core.',
  },
  'conntrack-min': {
    kind: 'int32',
    group: 'config',
    help: 'Minimum number of conntrack entries to allocate.',
  },
  'conntrack-tcp-timeout-established': {
    kind: 'duration',
    group: 'config',
    help: 'Idle timeout for established TCP connections (0 to leave as-is).',
  },
  'conntrack-tcp-timeout-close-wait': {
    kind: 'duration',
    group: 'config',
    help: 'NAT timeout for TCP connections in CLOSE_WAIT.',
  },
  'conntrack-tcp-be-liberal': {
    kind: 'bool',
    group: 'config',
    help: 'Enable liberal mode for tracking TCP packets (nf_conntrack_tcp_be_liberal=1).',
  },
  'conntrack-udp-timeout': {
    kind: 'duration',
    group: 'config',
    help: 'Idle timeout for UNREPLIED UDP connections.',
  },
  'conntrack-udp-timeout-stream': {
    kind: 'duration',
    group: 'config',
    help: 'Idle timeout for ASSURED UDP connections.',
  },
  'config-sync-period': {
    kind: 'duration',
    group: 'config',
    help: 'How often configuration from the apiserver is refreshed.',
  },
  'healthz-port': {
    kind: 'int32',
    group: 'config',
    help: 'The port to bind the health check server. Use 0 to disable.',
    deprecated: 'use --healthz-bind-address instead',
  },
  'metrics-port': {
    kind: 'int32',
    group: 'config',
    help: 'The port to bind the metrics server. Use 0 to disable.',
    deprecated: 'use --metrics-bind-address instead',
  },
  'proxy-port-range': {
    kind: 'string',
    group: 'config',
    help: 'This was previously used to configure the userspace proxy, but is now unused.',
    deprecated: 'it has no effect',
  },

  'ipvs-sync-period': {
    kind: 'duration',
    group: 'config',
    help: "ipvs mode: the longest time between full resyncs of the IPVS rules (e.g. '5s', '1m', '2h22m'); greater than 0.",
  },
  'ipvs-min-sync-period': {
    kind: 'duration',
    group: 'config',
    help: 'ipvs mode: the shortest time between two syncs; 0 syncs on every Service or EndpointSlice change.',
  },
  'ipvs-scheduler': {
    kind: 'string',
    group: 'config',
    help: 'ipvs mode: the IPVS scheduler of every virtual server (rr when empty; the kernel must have it).',
  },
  'ipvs-exclude-cidrs': {
    kind: 'stringSlice',
    group: 'config',
    help: 'ipvs mode: comma-separated CIDRs whose virtual servers the proxy never removes.',
  },
  'ipvs-strict-arp': {
    kind: 'bool',
    group: 'config',
    help: 'ipvs mode: set arp_ignore to 1 and arp_announce to 2 (strict ARP).',
  },
  'ipvs-tcp-timeout': {
    kind: 'duration',
    group: 'config',
    help: "ipvs mode: idle timeout of IPVS TCP connections; 0 leaves the kernel's value.",
  },
  'ipvs-tcpfin-timeout': {
    kind: 'duration',
    group: 'config',
    help: "ipvs mode: timeout of IPVS TCP connections after a FIN; 0 leaves the kernel's value.",
  },
  'ipvs-udp-timeout': {
    kind: 'duration',
    group: 'config',
    help: "ipvs mode: timeout of IPVS UDP flows; 0 leaves the kernel's value.",
  },
} as const satisfies Readonly<Record<string, FlagDef>>;

export type FlagName = keyof typeof FLAGS;

export type FlagValue =
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'bool'; readonly value: boolean }
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'duration'; readonly ms: number }
  | { readonly kind: 'list'; readonly value: readonly string[] }
  | { readonly kind: 'gates'; readonly value: Readonly<Record<string, boolean>> }
  | { readonly kind: 'vmodule'; readonly value: readonly VModuleEntry[] }
  | { readonly kind: 'version'; readonly value: boolean | 'raw' };

export interface ParsedFlags {
  /** The flags given, in the order first seen, with repeated flags combined as pflag does. */
  readonly values: ReadonlyMap<FlagName, FlagValue>;
  readonly problems: readonly ConfigProblem[];
  readonly warnings: readonly string[];
}

export function flagDef(name: FlagName): FlagDef {
  return FLAGS[name];
}

function isFlagName(name: string): name is FlagName {
  return Object.hasOwn(FLAGS, name);
}

const SHORTHANDS: ReadonlyMap<string, FlagName> = new Map(
  Object.entries<FlagDef>(FLAGS).flatMap(([name, def]) =>
    def.shorthand !== undefined && isFlagName(name) ? [[def.shorthand, name] as const] : [],
  ),
);

export function parseProxyFlags(argv: readonly string[]): ParsedFlags {
  const values = new Map<FlagName, FlagValue>();
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  const positional: string[] = [];

  const set = (name: FlagName, raw: string): void => {
    const def = flagDef(name);
    const parsed = parseValue(def.kind, raw);
    if (typeof parsed === 'string') {
      problems.push(problem(`--${name}`, parsed));
      return;
    }
    values.set(name, combine(values.get(name), parsed));
    if (def.deprecated !== undefined) warnings.push(`flag --${name} has been deprecated, ${def.deprecated}`);
  };

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const rawName = arg.slice(2, eq < 0 ? undefined : eq);
      const name = rawName.replaceAll('_', '-');
      if (!isFlagName(name)) {
        problems.push(problem(`--${rawName}`, 'unknown flag'));
        continue;
      }
      if (eq >= 0) set(name, arg.slice(eq + 1));
      else if (takesNoValue(name)) set(name, 'true');
      else if (i + 1 < argv.length) set(name, argv[++i] ?? '');
      else problems.push(problem(`--${name}`, 'flag needs an argument'));
    } else if (arg.startsWith('-') && arg.length > 1) {
      const short = arg.slice(1, 2);
      const rest = arg.slice(2);
      const name = SHORTHANDS.get(short);
      if (name === undefined) {
        problems.push(problem(arg, `unknown shorthand flag: '${short}' in ${arg}`));
        continue;
      }
      if (rest.startsWith('=')) set(name, rest.slice(1));
      else if (rest !== '') {
        if (takesNoValue(name)) problems.push(problem(arg, `unknown shorthand flag: '${rest[0]}' in ${arg}`));
        else set(name, rest);
      } else if (takesNoValue(name)) set(name, 'true');
      else if (i + 1 < argv.length) set(name, argv[++i] ?? '');
      else problems.push(problem(`-${short}`, 'flag needs an argument'));
    } else {
      positional.push(arg);
    }
  }
  for (const arg of positional) {
    if (arg !== '') {
      problems.push(problem('', `unexpected argument ${JSON.stringify(arg)}: kube-proxy takes no arguments`));
    }
  }
  return { values, problems, warnings };
}

function takesNoValue(name: FlagName): boolean {
  const kind = flagDef(name).kind;
  return kind === 'bool' || kind === 'version';
}

/** pflag's repeated-flag behaviour: lists append, maps merge, everything else is replaced. */
function combine(previous: FlagValue | undefined, next: FlagValue): FlagValue {
  if (previous?.kind === 'list' && next.kind === 'list') {
    return { kind: 'list', value: [...previous.value, ...next.value] };
  }
  if (previous?.kind === 'gates' && next.kind === 'gates') {
    return { kind: 'gates', value: { ...previous.value, ...next.value } };
  }
  if (previous?.kind === 'vmodule' && next.kind === 'vmodule') {
    return { kind: 'vmodule', value: [...previous.value, ...next.value] };
  }
  return next;
}

/** Go's strconv.ParseBool. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

/** The parsed value, or a message saying why the text is not one. */
function parseValue(kind: FlagKind, raw: string): FlagValue | string {
  switch (kind) {
    case 'string':
      return { kind: 'string', value: raw };
    case 'bool': {
      const b = parseGoBool(raw);
      return b === undefined ? `invalid boolean ${JSON.stringify(raw)}` : { kind: 'bool', value: b };
    }
    case 'version': {
      if (raw === 'raw') return { kind: 'version', value: 'raw' };
      const b = parseGoBool(raw);
      return b === undefined
        ? `invalid value ${JSON.stringify(raw)} (true, false or raw)`
        : { kind: 'version', value: b };
    }
    case 'int32': {
      const n = parseGoInt(raw);
      return n === undefined || n < -(2 ** 31) || n > 2 ** 31 - 1
        ? `invalid 32-bit integer ${JSON.stringify(raw)}`
        : { kind: 'number', value: n };
    }
    case 'float': {
      const n = raw.trim() === '' ? NaN : Number(raw);
      return Number.isFinite(n) ? { kind: 'number', value: n } : `invalid number ${JSON.stringify(raw)}`;
    }
    case 'duration': {
      const d = parseGoDuration(raw);
      return d.ok ? { kind: 'duration', ms: d.ms } : d.error;
    }
    case 'stringSlice':
      return { kind: 'list', value: raw === '' ? [] : raw.split(',') };
    case 'mapStringBool':
      return parseGates(raw);
    case 'vmodule':
      return parseVModule(raw);
  }
}

/** Integers as Go's ParseInt(s, 0, 32) reads them: decimal, 0x hex, 0o/0 octal, 0b binary. */
function parseGoInt(raw: string): number | undefined {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[1-9]\d*|0)$/.exec(raw);
  if (m === null) return undefined;
  const sign = m[1] === '-' ? -1 : 1;
  const body = m[2] ?? '';
  let value: number;
  if (/^0[xX]/.test(body)) value = parseInt(body.slice(2), 16);
  else if (/^0[bB]/.test(body)) value = parseInt(body.slice(2), 2);
  else if (/^0[oO]/.test(body)) value = parseInt(body.slice(2), 8);
  else if (body.length > 1 && body.startsWith('0')) value = parseInt(body.slice(1), 8);
  else value = parseInt(body, 10);
  return sign * value;
}

/** "A=true,B=false" (component-base's MapStringBool). */
function parseGates(raw: string): FlagValue | string {
  const value: Record<string, boolean> = {};
  for (const pair of raw.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) return `missing bool value for ${JSON.stringify(pair.trim())} (use Name=true)`;
    const name = pair.slice(0, eq).trim();
    const b = parseGoBool(pair.slice(eq + 1).trim());
    if (b === undefined)
      return `invalid value of ${name}=${pair.slice(eq + 1).trim()}, must be true or false`;
    value[name] = b;
  }
  return { kind: 'gates', value };
}

/** "pattern=N,..." (component-base's VModuleConfiguration). */
function parseVModule(raw: string): FlagValue | string {
  const value: VModuleEntry[] = [];
  for (const part of raw.split(',')) {
    if (part === '') continue;
    const eq = part.lastIndexOf('=');
    const level = eq < 0 ? NaN : Number(part.slice(eq + 1));
    if (eq <= 0 || !/^\d+$/.test(part.slice(eq + 1)) || !(level <= 2 ** 32 - 1)) {
      return `${JSON.stringify(part)} must be pattern=N with N a non-negative integer`;
    }
    value.push({ filePattern: part.slice(0, eq), verbosity: level });
  }
  return { kind: 'vmodule', value };
}

/** `--flag  help` lines for --help. */
export function flagUsage(): string {
  return Object.entries<FlagDef>(FLAGS)
    .map(([name, def]) => {
      const short = def.shorthand !== undefined ? `-${def.shorthand}, ` : '    ';
      const note = def.deprecated !== undefined ? ` (DEPRECATED: ${def.deprecated})` : '';
      return `  ${short}--${name}  ${def.help}${note}`;
    })
    .join('\n');
}

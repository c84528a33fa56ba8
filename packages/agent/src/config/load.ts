// The one entry point the CLI calls: argv (+ an injected file reader and hostname) → the effective ProxyConfig and
// the non-config options, or every problem found. Upstream's order (options.go Complete, server_linux.go):
//   --config given:  file → defaults → logging flags, --hostname-override (all other config flags ignored)
//   no --config:     defaults → config flags → deprecated --healthz-port/--metrics-port → logging flags
//   then platform defaults → node name → validation → the mode-dependent conversion.
// Pure: no process.exit, no I/O except through `deps`.
import { applyConfigFlags, applyLoggingFlags, attributeToFlag, bool, str } from './apply-flags.js';
import { toProxyConfig } from './convert.js';
import { resolveFeatureGates } from './feature-gates.js';
import { flagDef, parseProxyFlags } from './flags.js';
import { readChoice } from './choice.js';
import { DEFAULT_NFTABLES_LAYOUT, NFTABLES_LAYOUTS } from './nftables-layout.js';
import { DEFAULT_NFT_EXECUTOR, NFT_EXECUTORS } from './nft-executor.js';
import type { ParsedFlags } from './flags.js';
import { applyPlatformDefaults } from './platform-defaults.js';
import { problem } from './problems.js';
import type { ConfigProblem } from './problems.js';
import type { ProxyConfig, ProxyOptions } from './proxy-config.js';
import { decodeKubeProxyConfiguration } from './v1alpha1-decode.js';
import { defaultV1Alpha1 } from './v1alpha1-defaults.js';
import type { KubeProxyConfigurationV1Alpha1 } from './v1alpha1-types.js';
import { validateV1Alpha1 } from './validate.js';
import { errorMessage } from '../util/error-message.js';

export interface LoadDeps {
  /** Reads the --config file as text; may throw (the error becomes a problem naming the file). */
  readonly readFile: (path: string) => string;
  /** The OS hostname (used as the node name when hostnameOverride is empty). */
  readonly hostname: () => string;
}

export type LoadResult =
  | {
      readonly ok: true;
      readonly config: ProxyConfig;
      readonly options: ProxyOptions;
      readonly warnings: readonly string[];
    }
  | { readonly ok: false; readonly errors: readonly ConfigProblem[]; readonly warnings: readonly string[] };

/** --help or --version: answered before anything else is read, so they work even when the rest is wrong. */
export function earlyRequest(flags: ParsedFlags): 'help' | 'version' | 'version-raw' | undefined {
  if (bool(flags, 'help') === true) return 'help';
  const version = flags.values.get('version');
  if (version?.kind !== 'version' || version.value === false) return undefined;
  return version.value === 'raw' ? 'version-raw' : 'version';
}

export type OptionsRead =
  | { readonly ok: true; readonly options: ProxyOptions }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

/** The non-config options, each closed choice read into its type (a wrong name is a problem naming the flag). */
export function proxyOptionsFrom(flags: ParsedFlags): OptionsRead {
  const layout = readChoice(
    'layout',
    NFTABLES_LAYOUTS,
    str(flags, 'nftables-layout'),
    DEFAULT_NFTABLES_LAYOUT,
  );
  const executor = readChoice('executor', NFT_EXECUTORS, str(flags, 'nft-executor'), DEFAULT_NFT_EXECUTOR);
  const problems = [
    ...(layout.ok ? [] : [problem('--nftables-layout', layout.message)]),
    ...(executor.ok ? [] : [problem('--nft-executor', executor.message)]),
  ];
  if (!layout.ok || !executor.ok) return { ok: false, problems };
  return {
    ok: true,
    options: {
      configFile: str(flags, 'config'),
      cleanup: bool(flags, 'cleanup') ?? false,
      initOnly: bool(flags, 'init-only') ?? false,
      writeConfigTo: str(flags, 'write-config-to'),
      master: str(flags, 'master'),
      kubeconfig: str(flags, 'kubeconfig'),
      nftablesLayout: layout.value,
      nftExecutor: executor.value,
      nftablesStateDir: str(flags, 'nftables-state-dir') || undefined,
    },
  };
}

export function loadProxyConfig(argv: readonly string[], deps: LoadDeps): LoadResult {
  const flags = parseProxyFlags(argv);
  const warnings: string[] = [...flags.warnings];
  if (flags.problems.length > 0) return { ok: false, errors: flags.problems, warnings };
  const configFile = str(flags, 'config');
  const kubeconfig = str(flags, 'kubeconfig');
  const given = [...flags.values.keys()];
  const errors: ConfigProblem[] = [];

  let doc: KubeProxyConfigurationV1Alpha1;
  if (configFile !== undefined) {
    const fromFile = readConfigFile(configFile, deps);
    if (!fromFile.ok) return { ok: false, errors: fromFile.problems, warnings };
    warnings.push(...fromFile.warnings);
    doc = fromFile.doc;
    const ignored = given.filter((name) => flagDef(name).group === 'config');
    if (ignored.length > 0) {
      warnings.push(
        `flags ignored because --config is given (set these in ${configFile} instead): ` +
          ignored.map((n) => `--${n}`).join(', '),
      );
    }
  } else {
    doc = applyConfigFlags(defaultV1Alpha1({}), flags);
  }

  const hostnameFlag = str(flags, 'hostname-override');
  if (hostnameFlag !== undefined && hostnameFlag !== '') doc = { ...doc, hostnameOverride: hostnameFlag };
  if (kubeconfig !== undefined) {
    doc = { ...doc, clientConnection: { ...doc.clientConnection, kubeconfig } };
  }
  const read = proxyOptionsFrom(flags);
  if (!read.ok) errors.push(...read.problems);
  const logging = applyLoggingFlags(doc, flags);
  doc = logging.doc;
  errors.push(...logging.problems);

  doc = applyPlatformDefaults(doc);
  const node = nodeNameFor(doc.hostnameOverride, hostnameFlag !== undefined && hostnameFlag !== '', deps);
  if (!node.ok) errors.push(node.problem);
  else doc = { ...doc, hostnameOverride: doc.hostnameOverride === '' ? '' : node.name };

  // Logging flags and --hostname-override apply with --config too; the rest only without it.
  const fromFlags = configFile === undefined;
  errors.push(
    ...validateV1Alpha1(doc).map((p) =>
      fromFlags || p.field.startsWith('logging.') ? attributeToFlag(p, flags) : p,
    ),
  );
  warnings.push(...resolveFeatureGates(doc.featureGates).warnings);
  if (errors.length > 0 || !node.ok || !read.ok) return { ok: false, errors, warnings };

  const converted = toProxyConfig(doc, node.name);
  if (!converted.ok) return { ok: false, errors: converted.problems, warnings };
  return { ok: true, config: converted.config, options: read.options, warnings };
}

type FileRead =
  | { readonly ok: true; readonly doc: KubeProxyConfigurationV1Alpha1; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

function readConfigFile(path: string, deps: LoadDeps): FileRead {
  let text: string;
  try {
    text = deps.readFile(path);
  } catch (error: unknown) {
    const reason = errorMessage(error);
    return { ok: false, problems: [problem('--config', `cannot read ${JSON.stringify(path)}: ${reason}`)] };
  }
  const decoded = decodeKubeProxyConfiguration(text);
  if (!decoded.ok) {
    // Problems about the whole file get the file's name; field problems keep their v1alpha1 path.
    const problems = decoded.problems.map((p) =>
      p.field === '' ? problem('--config', `${path}: ${p.message}`) : p,
    );
    return { ok: false, problems };
  }
  const warnings =
    decoded.unknownFields.length === 0
      ? []
      : [
          `strict decoding of ${path} failed: unknown field(s) ${decoded.unknownFields
            .map((f) => JSON.stringify(f))
            .join(', ')}; decoded leniently, ignoring them`,
        ];
  return { ok: true, doc: defaultV1Alpha1(decoded.doc), warnings };
}

type NodeName =
  { readonly ok: true; readonly name: string } | { readonly ok: false; readonly problem: ConfigProblem };

/** Upstream's GetHostname: the override (or the OS hostname), trimmed and lower-cased, never empty. */
function nodeNameFor(override: string, fromFlag: boolean, deps: LoadDeps): NodeName {
  const field: string = fromFlag ? '--hostname-override' : 'hostnameOverride';
  if (override !== '') {
    const name = override.trim().toLowerCase();
    return name === ''
      ? { ok: false, problem: problem(field, 'must not be empty or only whitespace') }
      : { ok: true, name };
  }
  let os: string;
  try {
    os = deps.hostname();
  } catch (error: unknown) {
    const reason = errorMessage(error);
    return {
      ok: false,
      problem: problem('hostnameOverride', `unset, and the OS hostname is unavailable: ${reason}`),
    };
  }
  const name = os.trim().toLowerCase();
  return name === ''
    ? { ok: false, problem: problem('hostnameOverride', 'unset, and the OS hostname is empty') }
    : { ok: true, name };
}

// From a Pod's container spec to the argv and environment the lab's kubelet runs. The lab has no images and no
// mount namespaces: a container's process sees the host's filesystem, so volumes become directories on the host
// (a configMap volume is written out under the pod's state directory) and every argument that names a path under
// a volume's mountPath is rewritten to that directory. `kube-proxy-ts` (the image deploy/ builds, whose entry point
// is /usr/local/bin/kube-proxy-ts) is this checkout's own CLI. Environment variables follow the kubelet: literal
// values and fieldRef, and $(VAR) in command and args expands to them ($$(VAR) stays literal).
//
// agnhost images (registry.k8s.io/e2e-test-images/agnhost:TAG, lab/agnhost, …) whose args name an agnhost subcommand
// (`netexec --http-port=8080`, or `/agnhost serve-hostname`) run the lab's own agnhost (packages/netns/src/agnhost),
// with $HOSTNAME set to the Pod's hostname, since lab pods share the host's UTS namespace. Without args they keep the
// pod server; a word that is no subcommand (`sh -c …`) runs as given. CoreDNS's image (registry.k8s.io/coredns/
// coredns:TAG) runs the lab's DNS server, `kube-proxy-ts-lab dns-server`, with the container's args as its flags.
import { basename } from 'node:path';
import { arr, child, isObject, str, type JsonObject } from '../apiserver/json.js';
import { isAgnhostSubcommand } from '@kube-proxy-ts/netns/agnhost/subcommands.js';
import { isCorednsImage } from './cluster-dns.js';
import { agentCliArgv, agnhostArgv, labCliArgv } from './processes.js';

/** A volume as the process sees it: mountPath in the spec → a directory (or file) on the host. */
export interface VolumeMapping {
  readonly mountPath: string;
  readonly hostPath: string;
  /** A hostPath volume's `type` (FileOrCreate, DirectoryOrCreate, …), where the spec gives one. */
  readonly hostPathType?: string;
}

/**
 * How a kube-proxy container runs when the lab runs it from an image (`lab up --image`): its argv for the command
 * as the Pod spec writes it (paths not rewritten: the runtime mounts the volumes at their mountPaths).
 */
export type ImageLauncher = (
  words: readonly string[],
  env: Readonly<Record<string, string>>,
  volumes: readonly VolumeMapping[],
  container: string,
) => { readonly argv: string[]; readonly afterExit: string[] };

export interface ResolvedContainer {
  readonly name: string;
  readonly image: string;
  /** undefined: the container names no command; the lab runs its pod server (an HTTP/UDP echo) instead. */
  readonly argv: readonly string[] | undefined;
  readonly env: Readonly<Record<string, string>>;
  /** kubectl run -i / -t: the process gets a stdin the API server's attach can write to. */
  readonly stdin: boolean;
  readonly stdinOnce: boolean;
  readonly tty: boolean;
  /** The argv is a container runtime's that joins the Pod's network namespace itself (`lab up --image`). */
  readonly joinsNamespace?: boolean;
  /** Run after each run ends, however it ended: the runtime's removal of what a killed run left. */
  readonly afterExit?: readonly string[];
}

/** The executables that mean "this checkout's kube-proxy-ts" (deploy/'s image and kubeadm's kube-proxy). */
const KUBE_PROXY_EXECUTABLES = new Set(['kube-proxy-ts', 'kube-proxy']);

/** status.podIPs / status.hostIPs as the kubelet gives them to env: the ips joined by ",", else the single field. */
function ipList(pod: JsonObject, list: string, single: string): string | undefined {
  const status = child(pod, 'status');
  const ips = arr(status, list)
    .map((e) => str(e, 'ip'))
    .filter((ip): ip is string => ip !== undefined && ip !== '');
  return ips.length > 0 ? ips.join(',') : str(status, single);
}

function fieldValue(pod: JsonObject, path: string): string | undefined {
  const meta = child(pod, 'metadata');
  switch (path) {
    case 'metadata.name':
      return str(meta, 'name');
    case 'metadata.namespace':
      return str(meta, 'namespace');
    case 'metadata.uid':
      return str(meta, 'uid');
    case 'spec.nodeName':
      return str(child(pod, 'spec'), 'nodeName');
    case 'spec.serviceAccountName':
      return str(child(pod, 'spec'), 'serviceAccountName');
    case 'status.podIP':
      return str(child(pod, 'status'), 'podIP');
    case 'status.hostIP':
      return str(child(pod, 'status'), 'hostIP');
    // The downward API's lists: every address, comma-separated, as the kubelet writes them.
    case 'status.podIPs':
      return ipList(pod, 'podIPs', 'podIP');
    case 'status.hostIPs':
      return ipList(pod, 'hostIPs', 'hostIP');
    default:
      return undefined;
  }
}

/** Whether `image` is agnhost's: the repository's last path element, without tag or digest, is `agnhost`. */
export function isAgnhostImage(image: string): boolean {
  const repository = image.replace(/@.*$/, '').replace(/:[^/:]*$/, '');
  return repository.split('/').pop() === 'agnhost';
}

/**
 * The agnhost subcommand and its args that an agnhost container's words run (its entry point `/agnhost` dropped),
 * or undefined when they name none.
 */
export function agnhostCommand(image: string, words: readonly string[]): string[] | undefined {
  if (!isAgnhostImage(image)) return undefined;
  const rest = words[0] !== undefined && basename(words[0]) === 'agnhost' ? words.slice(1) : words;
  return isAgnhostSubcommand(rest[0]) ? [...rest] : undefined;
}

/**
 * CoreDNS's image runs the lab's DNS server (cluster-dns.ts): the container's words, an entry point `/coredns`
 * dropped, are `kube-proxy-ts-lab dns-server`'s flags.
 */
function corednsArgv(words: readonly string[]): string[] {
  const rest = words[0] !== undefined && basename(words[0]) === 'coredns' ? words.slice(1) : words;
  return labCliArgv(['dns-server', ...rest]);
}

/** The hostname a container of `pod` sees: the node's for hostNetwork Pods, else spec.hostname or the Pod's name. */
function podHostname(pod: JsonObject): string {
  const spec = child(pod, 'spec');
  if (isObject(spec) && spec.hostNetwork === true) return str(spec, 'nodeName') ?? '';
  return str(spec, 'hostname') ?? str(child(pod, 'metadata'), 'name') ?? '';
}

/** Kubernetes' $(VAR) expansion: defined variables expand, $$ escapes, anything else stays as written. */
export function expandVars(text: string, env: Readonly<Record<string, string>>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && Object.prototype.hasOwnProperty.call(env, name) ? (env[name] ?? '') : m;
  });
}

/** Rewrites a path (or `--flag=path`) under a mountPath to the volume's host directory. */
export function rewritePaths(arg: string, volumes: readonly VolumeMapping[]): string {
  // Longest mountPath first, so /var/lib/kube-proxy/x wins over /var/lib.
  const sorted = [...volumes].sort((a, b) => b.mountPath.length - a.mountPath.length);
  const rewrite = (path: string): string => {
    for (const v of sorted) {
      const mp = v.mountPath.replace(/\/+$/, '');
      if (path === mp) return v.hostPath;
      if (path.startsWith(`${mp}/`)) return `${v.hostPath}${path.slice(mp.length)}`;
    }
    return path;
  };
  const eq = arg.indexOf('=');
  if (arg.startsWith('-') && eq > 0) return `${arg.slice(0, eq + 1)}${rewrite(arg.slice(eq + 1))}`;
  return rewrite(arg);
}

export function resolveContainer(
  pod: JsonObject,
  container: JsonObject,
  volumes: readonly VolumeMapping[],
  imageLauncher?: ImageLauncher,
): ResolvedContainer {
  const env: Record<string, string> = {};
  for (const e of arr(container, 'env')) {
    const name = str(e, 'name');
    if (!name) continue;
    const value = str(e, 'value');
    const ref = str(child(child(e, 'valueFrom'), 'fieldRef'), 'fieldPath');
    if (value !== undefined) env[name] = expandVars(value, env);
    else if (ref !== undefined) env[name] = fieldValue(pod, ref) ?? '';
  }
  const expanded = [...arr(container, 'command'), ...arr(container, 'args')]
    .filter((w): w is string => typeof w === 'string')
    .map((w) => expandVars(w, env));
  const words = expanded.map((w) => rewritePaths(w, volumes));
  let argv: string[] | undefined = words.length > 0 ? words : undefined;
  const isKubeProxy = words[0] !== undefined && KUBE_PROXY_EXECUTABLES.has(basename(words[0]));
  const fromImage =
    isKubeProxy && imageLauncher
      ? imageLauncher(expanded, env, volumes, str(container, 'name') ?? '')
      : undefined;
  const image = str(container, 'image') ?? '';
  const agnhost = agnhostCommand(image, words);
  if (agnhost) argv = agnhostArgv(agnhost);
  else if (fromImage) argv = fromImage.argv;
  else if (isKubeProxy) argv = agentCliArgv(words.slice(1));
  else if (isCorednsImage(image)) argv = corednsArgv(words);
  return {
    name: str(container, 'name') ?? '',
    image,
    argv,
    env: agnhost && env.HOSTNAME === undefined ? { ...env, HOSTNAME: podHostname(pod) } : env,
    stdin: isObject(container) && container.stdin === true,
    stdinOnce: isObject(container) && container.stdinOnce === true,
    tty: isObject(container) && container.tty === true,
    ...(fromImage ? { joinsNamespace: true, afterExit: fromImage.afterExit } : {}),
  };
}

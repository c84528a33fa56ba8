// kube-system/kube-proxy as the lab runs it: deploy/daemonset.yaml itself (kubeadm's shape: k8s-app=kube-proxy,
// host network, the ConfigMap mounted at /var/lib/kube-proxy, $(NODE_NAME) from spec.nodeName, its readiness
// probe, asked every second here), with the additions the lab needs: --kubeconfig names the node's kubeconfig in the lab's state directory (pods see the
// host's filesystem; the token stays out of the ConfigMap, where deploy/'s kubeconfig.conf reads a service
// account's), lab-only flags (--nftables-layout) appended as a DaemonSet's args would carry them, and the node's own
// environment (node-env.ts: its xtables lock, the iptables back end), and its own --nftables-state-dir under its
// node directory in place of deploy/'s hostPath /run/kube-proxy-ts, which every lab node would share.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { arr, child, isObject, type JsonObject } from '../apiserver/json.js';

export const KUBE_PROXY_LABELS = { 'k8s-app': 'kube-proxy' } as const;

/** The repository's deploy/daemonset.yaml (from packages/lab/src/cluster or packages/lab/dist/cluster alike). */
function deployManifestPath(): string {
  for (const rel of ['../../../../deploy/daemonset.yaml']) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new Error('deploy/daemonset.yaml is missing: the lab runs kube-proxy from that DaemonSet');
}

export function kubeProxyDaemonSet(options: {
  /** The node's kubeconfig, with $(NODE_NAME) where the node's name goes. */
  readonly kubeconfigPath: string;
  readonly extraArgs?: readonly string[];
  /** Variables added to the container's env, after its own (so they may use `$(NODE_NAME)`). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The node's own directory for --nftables-state-dir (with `$(NODE_NAME)`), instead of deploy/'s hostPath
   * /run/kube-proxy-ts, which every lab node would share (and which would outlive the lab).
   */
  readonly stateDir?: string;
}): JsonObject {
  const doc: unknown = parse(readFileSync(deployManifestPath(), 'utf8'));
  if (!isObject(doc) || doc.kind !== 'DaemonSet')
    throw new Error('deploy/daemonset.yaml: expected one DaemonSet document');
  const container = arr(child(child(child(doc, 'spec'), 'template'), 'spec'), 'containers')[0];
  if (!isObject(container) || !Array.isArray(container.command))
    throw new Error('deploy/daemonset.yaml: its first container has no command');
  // Ready once the proxy has programmed its rules (deploy/'s probe asks its last-sync time), so that a rolling
  // update moves to the next node only after this one's new proxy works, and `rollout status` means what it says.
  // The lab probes every second rather than deploy/'s five, so that a rollout takes seconds while someone watches.
  const probe = isObject(container.readinessProbe)
    ? container.readinessProbe
    : {
        exec: {
          command: [
            'sh',
            '-c',
            "curl -sf http://127.0.0.1:10249/metrics | grep -q '^kubeproxy_sync_proxy_rules_last_timestamp_seconds.* [1-9]'",
          ],
        },
        timeoutSeconds: 5,
      };
  // The image's Node.js is, here, the one running the lab (sudo's PATH may not have it).
  const command = child(probe, 'exec').command;
  if (Array.isArray(command) && command[0] === 'node')
    probe.exec = { ...child(probe, 'exec'), command: [process.execPath, ...command.slice(1)] };
  container.readinessProbe = { ...probe, initialDelaySeconds: 0, periodSeconds: 1 };
  container.env = [
    ...arr(container, 'env'),
    ...Object.entries(options.env ?? {}).map(([name, value]) => ({ name, value })),
  ];
  container.command = [
    ...container.command,
    `--kubeconfig=${options.kubeconfigPath}`,
    ...(options.extraArgs ?? []),
  ];
  if (options.stateDir !== undefined) perNodeStateDir(doc, container, options.stateDir);
  return doc;
}

/** The volume deploy/ mounts for --nftables-state-dir, and the flag's prefix. */
const STATE_VOLUME = 'kube-proxy-ts-state';
const STATE_FLAG = '--nftables-state-dir=';

/** --nftables-state-dir names `dir` (the node's own), and deploy/'s shared hostPath for it is gone. */
function perNodeStateDir(doc: JsonObject, container: JsonObject, dir: string): void {
  const command = (container.command as unknown[]).filter(
    (w) => !(typeof w === 'string' && w.startsWith(STATE_FLAG)),
  );
  container.command = [...command, `${STATE_FLAG}${dir}`];
  container.volumeMounts = arr(container, 'volumeMounts').filter(
    (m) => !(isObject(m) && m.name === STATE_VOLUME),
  );
  const podSpec = child(child(child(doc, 'spec'), 'template'), 'spec');
  podSpec.volumes = arr(podSpec, 'volumes').filter((v) => !(isObject(v) && v.name === STATE_VOLUME));
}

// `lab up --image FILE`: the kube-proxy DaemonSet's container runs from the node image scripts/image.sh builds, by
// runc, as a node's container runtime would run it, instead of as this checkout's CLI on the host's files. The
// archive is unpacked once (the root file system is shared, read-only, by every node's container); each container
// run gets a bundle of its own whose config.json is the DaemonSet's container spec: the command as written (no
// path rewriting: the volumes are bind-mounted at their mountPaths), its environment, the node's network
// namespace, and the lab's state directory at the same path (the node's kubeconfig, its xtables lock and the
// iptables back end the lab chose live there). The lab still starts and stops it as any container process: the
// process it tracks is `runc run`, which passes SIGTERM to the agent and exits with the agent's code.
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { findOnPath } from 'kube-proxy-ts/util/find-on-path.js';
import { runcSpec, unpackImage, type BindMount, type OciBundle } from '../oci/runc.js';
import type { VolumeMapping } from './container-spec.js';

export interface ImageRuntime {
  /** The OCI archive the lab runs kube-proxy from. */
  readonly archive: string;
  readonly image: OciBundle;
  /** runc's state directory (`runc --root`), inside the lab's state directory so that `lab down` removes it. */
  readonly runcRoot: string;
  /** The lab's state directory, bind-mounted into each container at the same path. */
  readonly stateDir: string;
}

/** What one container run needs beyond the image: where its bundle goes, and the node it runs on. */
export interface ImageContainer {
  /** The container's own directory (its bundle is written to `dir/bundle`). */
  readonly dir: string;
  /** runc's container id: unique among the lab's running containers. */
  readonly id: string;
  /** The container's command and args, $(VAR)s expanded, paths as the Pod spec writes them. */
  readonly words: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly volumes: readonly VolumeMapping[];
  /** The network namespace to join (the node's, for a host-network Pod). */
  readonly netns: string;
  readonly hostname: string;
}

/** The tools the image runtime runs, each from the Debian package of the same name. */
const RUNTIME_TOOLS = ['runc', 'umoci', 'tar'] as const;

/** Unpacks `archive` into the lab's state directory; an error names the missing tool or the bad archive. */
export async function openImageRuntime(
  runner: CommandRunner,
  archive: string,
  stateDir: string,
): Promise<ImageRuntime> {
  if (!existsSync(archive))
    throw new Error(`--image ${archive}: no such file (bash scripts/image.sh writes one)`);
  const missing = RUNTIME_TOOLS.filter((tool) => findOnPath(tool) === undefined);
  if (missing.length > 0)
    throw new Error(`--image needs ${missing.join(', ')} on PATH (apt-get install ${missing.join(' ')})`);
  // A lab that was killed leaves its unpacked image behind; this one unpacks afresh.
  rmSync(join(stateDir, 'image'), { recursive: true, force: true });
  const image = await unpackImage(runner, archive, join(stateDir, 'image'));
  return { archive, image, runcRoot: join(stateDir, 'runc'), stateDir };
}

/**
 * PATH inside the container: the image's own, after any directory of the lab's state directory that the lab put
 * first (its `--iptables` back end: links to /usr/sbin/iptables-legacy or -nft, which resolve in the image).
 */
export function containerPath(
  imageEnv: readonly string[],
  env: Readonly<Record<string, string>>,
  stateDir: string,
): string {
  const imagePath =
    imageEnv.find((e) => e.startsWith('PATH='))?.slice('PATH='.length) ?? '/usr/sbin:/usr/bin:/sbin:/bin';
  const labDirs = (env.PATH ?? '').split(':').filter((d) => d === stateDir || d.startsWith(`${stateDir}/`));
  return [...labDirs, imagePath].join(':');
}

/** A bind mount needs its source: hostPath volumes of type FileOrCreate and DirectoryOrCreate, as the kubelet does. */
function createHostPath(v: VolumeMapping): void {
  if (existsSync(v.hostPath)) return;
  if (v.hostPathType === 'DirectoryOrCreate') mkdirSync(v.hostPath, { recursive: true, mode: 0o755 });
  if (v.hostPathType === 'FileOrCreate') {
    mkdirSync(dirname(v.hostPath), { recursive: true, mode: 0o755 });
    closeSync(openSync(v.hostPath, 'a', 0o644));
  }
}

/**
 * Writes the container's bundle (config.json; the root file system is the image's, read-only) and returns the argv
 * the lab's kubelet launches, `runc run` after removing a container of the same id a killed run may have left,
 * and the argv that removes it after a run (`runc delete --force` kills what a SIGKILLed runc left running).
 */
export function imageContainerArgv(
  runtime: ImageRuntime,
  c: ImageContainer,
): { readonly argv: string[]; readonly afterExit: string[] } {
  const bundle = join(c.dir, 'bundle');
  mkdirSync(bundle, { recursive: true, mode: 0o700 });
  for (const v of c.volumes) createHostPath(v);
  // A hostPath this host lacks (a kernel built without modules has no /lib/modules) is left out: the lab's nodes
  // share this host, and the container then sees the image's own directory, as empty as the host's would be.
  const present = c.volumes.filter((v) => existsSync(v.hostPath));
  const mounts: BindMount[] = [
    { source: runtime.stateDir, destination: runtime.stateDir },
    ...present.map((v) => ({ source: v.hostPath, destination: v.mountPath })),
  ];
  const spec = runcSpec(runtime.image, {
    command: c.words,
    env: { ...c.env, PATH: containerPath(runtime.image.env, c.env, runtime.stateDir) },
    netns: c.netns,
    mounts,
    readonlyRoot: true,
    hostname: c.hostname,
  });
  writeFileSync(join(bundle, 'config.json'), `${JSON.stringify(spec, null, 2)}\n`);
  const runc = ['runc', '--root', runtime.runcRoot];
  const script = '"$@" delete --force "$ID" >/dev/null 2>&1; exec "$@" run --bundle "$BUNDLE" "$ID"';
  return {
    argv: ['env', `ID=${c.id}`, `BUNDLE=${bundle}`, 'sh', '-c', script, 'sh', ...runc],
    afterExit: [...runc, 'delete', '--force', c.id],
  };
}

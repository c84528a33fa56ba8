// Debian's kernel for a guest, fetched on first use and kept in a cache: `apt-get download` of the package
// linux-image-amd64 depends on, unpacked with `dpkg-deb -x` (nothing is installed: the host's /boot, /lib/modules
// and dpkg database stay as they were), and `depmod -b` run on the unpacked tree so modprobe can resolve its
// modules. A later call finds the tree and downloads nothing; without a network it uses the newest tree cached.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Where the project caches what it fetches from Debian for guests (the kernel, generated initramfs images). */
export const DEFAULT_VM_CACHE_DIR = '/var/cache/kube-proxy-ts/vm';

/** The Debian package whose dependency names the current kernel image (Debian 12: linux-image-6.1.0-N-amd64). */
export const DEBIAN_KERNEL_METAPACKAGE = 'linux-image-amd64';

export interface GuestKernel {
  /** The kernel's release, as `uname -r` prints it in the guest (e.g. 6.1.0-57-amd64). */
  readonly release: string;
  /** The unpacked package's root: boot/vmlinuz-RELEASE, lib/modules/RELEASE. */
  readonly tree: string;
  readonly vmlinuz: string;
  /** lib/modules/RELEASE inside the tree, with modules.dep from depmod. */
  readonly modulesDir: string;
}

/** Runs a command to its end; rejects with its stderr and the command line when it fails. */
export function runTool(
  cmd: string,
  args: readonly string[],
  options: { cwd?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, [...args], { cwd: options.cwd, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${[cmd, ...args].join(' ')} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

function kernelIn(tree: string): GuestKernel | undefined {
  const modules = join(tree, 'lib', 'modules');
  if (!existsSync(modules)) return undefined;
  const release = readdirSync(modules).find((r) => existsSync(join(modules, r, 'modules.dep')));
  if (release === undefined) return undefined;
  const vmlinuz = join(tree, 'boot', `vmlinuz-${release}`);
  if (!existsSync(vmlinuz)) return undefined;
  return { release, tree, vmlinuz, modulesDir: join(modules, release) };
}

/** The image package apt would install for linux-image-amd64 now, with its version (`pkg_version`). */
async function candidatePackage(): Promise<{ name: string; version: string }> {
  const depends = await runTool('apt-cache', ['depends', DEBIAN_KERNEL_METAPACKAGE]);
  const name = /Depends: (linux-image-[^\s<>]+)/.exec(depends)?.[1];
  if (name === undefined)
    throw new Error(`apt-cache names no kernel image that ${DEBIAN_KERNEL_METAPACKAGE} depends on`);
  const policy = await runTool('apt-cache', ['policy', name]);
  const version = /Candidate: (\S+)/.exec(policy)?.[1];
  if (version === undefined || version === '(none)') throw new Error(`apt has no candidate for ${name}`);
  return { name, version };
}

function newestCached(kernelsDir: string): GuestKernel | undefined {
  if (!existsSync(kernelsDir)) return undefined;
  const trees = readdirSync(kernelsDir)
    .filter((d) => !d.includes('.tmp'))
    .sort()
    .reverse();
  for (const dir of trees) {
    const kernel = kernelIn(join(kernelsDir, dir));
    if (kernel) return kernel;
  }
  return undefined;
}

/**
 * Debian's current kernel for guests, from the cache or fetched into it (`<cacheDir>/kernels/<package>_<version>/`).
 * Safe to call from two processes at once: each unpacks into a directory of its own and renames it into place.
 */
export async function debianKernel(cacheDir: string = DEFAULT_VM_CACHE_DIR): Promise<GuestKernel> {
  const kernelsDir = join(cacheDir, 'kernels');
  let pkg: { name: string; version: string };
  try {
    pkg = await candidatePackage();
  } catch (e) {
    const cached = newestCached(kernelsDir);
    if (cached) return cached; // offline, or apt's lists are gone: what was fetched before still boots
    throw e;
  }
  const tree = join(kernelsDir, `${pkg.name}_${pkg.version}`);
  const ready = kernelIn(tree);
  if (ready) return ready;

  const work = `${tree}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'download'), { recursive: true });
  try {
    // As root, apt drops to the _apt user for downloads, which cannot write a root-owned cache: stay root.
    await runTool(
      'apt-get',
      ['download', '-q', '-o', 'APT::Sandbox::User=root', `${pkg.name}=${pkg.version}`],
      {
        cwd: join(work, 'download'),
      },
    );
    const deb = readdirSync(join(work, 'download')).find((f) => f.endsWith('.deb'));
    if (deb === undefined) throw new Error(`apt-get download ${pkg.name} left no .deb`);
    await runTool('dpkg-deb', ['-x', join(work, 'download', deb), join(work, 'tree')]);
    rmSync(join(work, 'download'), { recursive: true, force: true });
    const release = readdirSync(join(work, 'tree', 'lib', 'modules'))[0];
    if (release === undefined) throw new Error(`${deb} holds no lib/modules/<release>`);
    await runTool('depmod', ['-b', join(work, 'tree'), release]);
    mkdirSync(kernelsDir, { recursive: true });
    if (!kernelIn(tree)) {
      rmSync(tree, { recursive: true, force: true });
      renameSync(join(work, 'tree'), tree);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const kernel = kernelIn(tree);
  if (!kernel) throw new Error(`unpacked ${pkg.name} into ${tree} but found no kernel and modules there`);
  return kernel;
}

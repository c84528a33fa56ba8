// The guest's initramfs, generated from Debian's kernel tree and the host's busybox-static: /init (init-script.ts),
// busybox, and the modules the guest needs with everything they depend on (from the tree's modules.dep), indexed
// again by depmod so busybox's modprobe finds them. Built once per kernel and content, and cached.
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { initScript } from './init-script.js';
import { runTool, type GuestKernel } from './kernel.js';

/** Loaded by /init before it mounts anything: the devices, the root's file systems, and the netfilter core. */
export const BOOT_MODULES = [
  'virtio_pci',
  'virtio_console',
  'virtio_net',
  'virtio_rng',
  '9pnet_virtio',
  '9p',
  'overlay',
  // libcrc32c (nf_tables, nf_conntrack, nf_nat) wants a crc32c: a soft dependency busybox's modprobe ignores.
  'crc32c_generic',
  'nf_tables',
  'nf_conntrack',
  'nf_nat',
  'ip_tables',
  'ip6_tables',
  'veth',
  'br_netfilter',
] as const;

/**
 * Also in the initramfs, loaded on demand (the kernel asks /sbin/modprobe when nft or iptables needs one): the
 * nftables expressions and iptables matches and targets kube-proxy's rules use, conntrack's netlink, and IPVS.
 */
export const ON_DEMAND_MODULES = [
  'nft_ct',
  'nft_nat',
  'nft_chain_nat',
  'nft_masq',
  'nft_numgen',
  'nft_reject_inet',
  // kube-proxy's tables are of family ip and ip6, whose reject and fib are modules of their own (the inet ones
  // above serve only inet tables): without them `reject` in an ip table fails with ENOENT.
  'nft_reject_ipv4',
  'nft_reject_ipv6',
  'nft_fib_inet',
  'nft_fib_ipv4',
  'nft_fib_ipv6',
  'nft_objref',
  'nft_redir',
  'nft_hash',
  'nft_log',
  'nft_compat',
  'nft_limit',
  'nf_conntrack_netlink',
  'nfnetlink_acct',
  'nfnetlink_log',
  'iptable_filter',
  'iptable_nat',
  'iptable_mangle',
  'iptable_raw',
  'ip6table_filter',
  'ip6table_nat',
  'ip6table_mangle',
  'ip6table_raw',
  // -p tcp/udp with --dport/--sport (in 6.1 a module, not part of x_tables).
  'xt_tcpudp',
  'xt_state',
  'xt_NFLOG',
  'xt_comment',
  'xt_mark',
  'xt_conntrack',
  'xt_MASQUERADE',
  'xt_statistic',
  'xt_recent',
  'xt_addrtype',
  'xt_multiport',
  'xt_nfacct',
  'xt_physdev',
  'xt_set',
  'xt_ipvs',
  'xt_REDIRECT',
  'xt_nat',
  'xt_LOG',
  'xt_limit',
  'ipt_REJECT',
  'ip6t_REJECT',
  'ip_vs',
  'ip_vs_rr',
  'ip_vs_wrr',
  'ip_vs_sh',
  'ip_vs_lc',
  'ip_set_hash_ip',
  'ip_set_hash_ipport',
  'ip_set_hash_ipportip',
  'ip_set_hash_ipportnet',
  'ip_set_hash_net',
  'ip_set_bitmap_port',
  'tun',
  'dummy',
] as const;

/** Where the host's busybox-static puts its binary (Debian: /bin/busybox; the dynamic `busybox` package differs). */
export const BUSYBOX_STATIC = '/bin/busybox';

/** `kernel/…/name.ko` paths of `names` and of every module they depend on, from the tree's modules.dep. */
export function moduleClosure(modulesDep: string, names: readonly string[]): string[] {
  const deps = new Map<string, string[]>();
  const byName = new Map<string, string>();
  for (const line of modulesDep.split('\n')) {
    const [file, rest] = line.split(':');
    if (file === undefined || rest === undefined) continue;
    deps.set(file, rest.trim() === '' ? [] : rest.trim().split(/\s+/));
    const base = file.slice(file.lastIndexOf('/') + 1).replace(/\.ko(\.\w+)?$/, '');
    byName.set(base.replace(/-/g, '_'), file);
  }
  const out = new Set<string>();
  const visit = (file: string): void => {
    if (out.has(file)) return;
    out.add(file);
    for (const dep of deps.get(file) ?? []) visit(dep);
  };
  for (const name of names) {
    const file = byName.get(name.replace(/-/g, '_'));
    if (file === undefined)
      throw new Error(`module ${name} is not in modules.dep (built in, or not in this kernel?)`);
    visit(file);
  }
  return [...out].sort();
}

/**
 * The initramfs for `kernel` (an uncompressed newc cpio: under emulation the kernel unpacks it faster than it
 * inflates a gzip), from the cache or built into it as `<cacheDir>/initramfs/<release>-<content hash>.cpio`.
 */
export async function guestInitramfs(kernel: GuestKernel, cacheDir: string): Promise<string> {
  if (!existsSync(BUSYBOX_STATIC))
    throw new Error(`${BUSYBOX_STATIC} is missing: install Debian's busybox-static`);
  const modulesDep = readFileSync(join(kernel.modulesDir, 'modules.dep'), 'utf8');
  const modules = moduleClosure(modulesDep, [...BOOT_MODULES, ...ON_DEMAND_MODULES]);
  const init = initScript(BOOT_MODULES);
  const hash = createHash('sha256')
    .update(init)
    .update(modules.join('\n'))
    .update(readFileSync(BUSYBOX_STATIC))
    .digest('hex')
    .slice(0, 16);
  const out = join(cacheDir, 'initramfs', `${kernel.release}-${hash}.cpio`);
  if (existsSync(out)) return out;

  const stage = `${out}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  try {
    const moduleRoot = join(stage, 'root', 'lib', 'modules', kernel.release);
    for (const file of modules) {
      mkdirSync(dirname(join(moduleRoot, file)), { recursive: true });
      copyFileSync(join(kernel.modulesDir, file), join(moduleRoot, file));
    }
    for (const index of ['modules.order', 'modules.builtin', 'modules.builtin.modinfo']) {
      copyFileSync(join(kernel.modulesDir, index), join(moduleRoot, index));
    }
    await runTool('depmod', ['-b', join(stage, 'root'), kernel.release]);
    mkdirSync(join(stage, 'root', 'bin'), { recursive: true });
    copyFileSync(BUSYBOX_STATIC, join(stage, 'root', 'bin', 'busybox'));
    chmodSync(join(stage, 'root', 'bin', 'busybox'), 0o755);
    writeFileSync(join(stage, 'root', 'init'), init, { mode: 0o755 });
    await runTool(
      'sh',
      ['-c', 'find . -print0 | cpio --null -o -H newc --quiet -R 0:0 > ../initramfs.cpio'],
      {
        cwd: join(stage, 'root'),
      },
    );
    renameSync(join(stage, 'initramfs.cpio'), out);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return out;
}

// Links, addresses and routes inside namespaces (`ip -n NS …`). Both ends of a veth pair are always created
// inside named namespaces, so the root namespace never holds one of our links, not even for a moment.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { runChecked } from './exec.js';
import { checkInterfaceName, checkNamespaceName } from './names.js';

export interface LinkEnd {
  readonly namespace: string;
  readonly name: string;
  /** A fixed MAC address ("0a:58:c6:12:0a:05"); default: the kernel's random one. */
  readonly address?: string;
}

function ipIn(namespace: string, ...args: string[]): string[] {
  return ['-n', checkNamespaceName(namespace), ...args];
}

function checkMac(mac: string): string {
  if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(mac))
    throw new Error(`${JSON.stringify(mac)} is not a MAC address`);
  return mac;
}

/**
 * The MAC address a pod's interface gets from its address, as the CNI bridge plugin makes it: the locally
 * administered prefix 0a:58 and the IPv4 address's four bytes (an IPv6 address's last four). A new pod that is
 * given a departed pod's address then also has its MAC, so the neighbour caches of the node and of the other
 * pods on the bridge stay right; with a random MAC they would send to the old one until their entry timed out
 * (seconds of lost packets to a pod that is ready).
 */
export function macForAddress(ip: string): string {
  let bytes: number[];
  if (ip.includes(':')) {
    const groups = ip.split('::');
    const head = (groups[0] ?? '').split(':').filter((g) => g !== '');
    const tail = (groups[1] ?? '').split(':').filter((g) => g !== '');
    const full = [...head, ...Array(8 - head.length - tail.length).fill('0'), ...tail];
    bytes = full.slice(6).flatMap((g) => {
      const v = parseInt(g, 16);
      return [v >> 8, v & 0xff];
    });
  } else bytes = ip.split('.').map(Number);
  return ['0a', '58', ...bytes.map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

/**
 * Creates a veth pair with one end in each namespace, both brought up. Names go after the `name` keyword: bare,
 * `ip link add` would read a name such as "a" as an abbreviation of one of its own keywords.
 */
export async function addVethPair(runner: CommandRunner, a: LinkEnd, b: LinkEnd): Promise<void> {
  checkInterfaceName(a.name);
  checkInterfaceName(b.name);
  checkNamespaceName(b.namespace);
  await runChecked(
    runner,
    `add veth ${a.namespace}/${a.name} <-> ${b.namespace}/${b.name}`,
    'ip',
    ipIn(
      a.namespace,
      'link',
      'add',
      'name',
      a.name,
      'type',
      'veth',
      ...(a.address !== undefined ? ['address', checkMac(a.address)] : []),
      'peer',
      'name',
      b.name,
      ...(b.address !== undefined ? ['address', checkMac(b.address)] : []),
      'netns',
      b.namespace,
    ),
  );
  await setLinkUp(runner, a.namespace, a.name);
  await setLinkUp(runner, b.namespace, b.name);
}

/** Creates a Linux bridge and brings it up. */
export async function addBridge(runner: CommandRunner, namespace: string, name: string): Promise<void> {
  checkInterfaceName(name);
  await runChecked(
    runner,
    `add bridge ${namespace}/${name}`,
    'ip',
    ipIn(namespace, 'link', 'add', 'name', name, 'type', 'bridge'),
  );
  await setLinkUp(runner, namespace, name);
}

/** Attaches `link` to `bridge` (both in `namespace`). */
export async function setLinkMaster(
  runner: CommandRunner,
  namespace: string,
  link: string,
  bridge: string,
): Promise<void> {
  await runChecked(
    runner,
    `attach ${namespace}/${link} to bridge ${bridge}`,
    'ip',
    ipIn(namespace, 'link', 'set', checkInterfaceName(link), 'master', checkInterfaceName(bridge)),
  );
}

/**
 * Lets the bridge send a frame back out of the port it came in on (the CNI bridge plugin's hairpinMode, kubelet's
 * hairpin-veth). A pod that reaches itself through its Service needs it: br_netfilter DNATs the frame at the bridge
 * and, seeing the new destination behind the same bridge, bridges it back to the sending port.
 */
export async function setBridgePortHairpin(
  runner: CommandRunner,
  namespace: string,
  link: string,
  on: boolean,
): Promise<void> {
  await runChecked(
    runner,
    `set hairpin ${on ? 'on' : 'off'} on ${namespace}/${link}`,
    'ip',
    ipIn(
      namespace,
      'link',
      'set',
      'dev',
      checkInterfaceName(link),
      'type',
      'bridge_slave',
      'hairpin',
      on ? 'on' : 'off',
    ),
  );
}

export async function setLinkUp(runner: CommandRunner, namespace: string, link: string): Promise<void> {
  await runChecked(
    runner,
    `bring ${namespace}/${link} up`,
    'ip',
    ipIn(namespace, 'link', 'set', checkInterfaceName(link), 'up'),
  );
}

/** Adds an address with prefix ("198.18.0.10/24", "2001:db8::1/64"). IPv6 skips DAD so it is usable at once. */
export async function addAddress(
  runner: CommandRunner,
  namespace: string,
  link: string,
  cidr: string,
): Promise<void> {
  const extra = cidr.includes(':') ? ['nodad'] : [];
  await runChecked(
    runner,
    `add address ${cidr} on ${namespace}/${link}`,
    'ip',
    ipIn(namespace, 'address', 'add', cidr, 'dev', checkInterfaceName(link), ...extra),
  );
}

export interface RouteSpec {
  /** "198.18.11.0/24", or "default". */
  readonly to: string;
  /** Next hop; omit for an on-link route through `dev`. */
  readonly via?: string;
  readonly dev?: string;
  /** A source address hint for locally generated packets. */
  readonly src?: string;
}

export async function addRoute(runner: CommandRunner, namespace: string, route: RouteSpec): Promise<void> {
  const args = ['route', 'add', route.to];
  if (route.via !== undefined) args.push('via', route.via);
  if (route.dev !== undefined) args.push('dev', checkInterfaceName(route.dev));
  if (route.src !== undefined) args.push('src', route.src);
  const family = route.to.includes(':') || (route.via ?? '').includes(':') ? ['-6'] : [];
  await runChecked(runner, `add route ${route.to} in ${namespace}`, 'ip', [
    ...family,
    ...ipIn(namespace, ...args),
  ]);
}

/** Interface name → addresses with prefix, as NodeNetworkConfig.hostInterfaces wants them (scope global only). */
export async function listAddresses(
  runner: CommandRunner,
  namespace: string,
): Promise<Map<string, string[]>> {
  const out = await runChecked(
    runner,
    `list addresses in ${namespace}`,
    'ip',
    ipIn(namespace, '-json', 'address', 'show'),
  );
  const result = new Map<string, string[]>();
  const parsed: unknown = JSON.parse(out || '[]');
  if (!Array.isArray(parsed)) return result;
  for (const link of parsed as unknown[]) {
    if (typeof link !== 'object' || link === null) continue;
    const { ifname, addr_info: addrInfo } = link as { ifname?: unknown; addr_info?: unknown };
    if (typeof ifname !== 'string' || !Array.isArray(addrInfo)) continue;
    const addresses: string[] = [];
    for (const a of addrInfo as unknown[]) {
      if (typeof a !== 'object' || a === null) continue;
      const { local, prefixlen, scope } = a as { local?: unknown; prefixlen?: unknown; scope?: unknown };
      if (typeof local === 'string' && typeof prefixlen === 'number' && scope === 'global') {
        addresses.push(`${local}/${prefixlen}`);
      }
    }
    if (addresses.length > 0) result.set(ifname, addresses);
  }
  return result;
}

// What ipvs mode needs of the node, checked once at start before anything is programmed: the kernel modules
// (IPVS, the configured scheduler's module, conntrack, the dummy link type kube-ipvs0 is made of) and the ipset
// tool. Upstream's CanUseIPVSProxier asks the kernel by adding a probe virtual server; that probe runs after this
// check, once the modules are known to be there (see probeScheduler), so a kernel without IP_VS (this project's CI
// machine) gets a message naming the modules rather than a netlink error.
import { existsSync, readFileSync } from 'node:fs';
import type { CommandRunner } from '../../netfilter/command.js';
import { checkMinVersion, IPSetClient, MIN_IPSET_CHECK_VERSION } from '../../netfilter/ipset/client.js';
import { errorMessage } from '../../util/error-message.js';

/** Logged at start and sent as the Node's IPVSDeprecation event, as upstream does since 1.35 (k/k #134539). */
export const IPVS_DEPRECATION =
  'The ipvs proxy mode is deprecated (KEP-5495) and will be removed from Kubernetes; use "nftables" instead.';

/** rr when the configuration leaves the scheduler empty (upstream's default). */
export const DEFAULT_IPVS_SCHEDULER = 'rr';

export interface ModuleReadings {
  /** True when /sys/module/<name> exists (loaded, or built in with parameters). */
  readonly loaded: (name: string) => boolean;
  /** The kernel's modules.builtin list, if readable. */
  readonly builtin: () => readonly string[];
}

/** The node's own readings, from /sys/module and /lib/modules/<release>/modules.builtin. */
export function hostModuleReadings(release: string): ModuleReadings {
  return {
    loaded: (name) => existsSync(`/sys/module/${name}`),
    builtin: () => {
      try {
        return readFileSync(`/lib/modules/${release}/modules.builtin`, 'utf8')
          .split('\n')
          .map((line) => (line.split('/').pop() ?? '').replace(/\.ko$/, ''));
      } catch {
        return [];
      }
    },
  };
}

/** The modules ipvs mode needs for this scheduler, in the order they are named. */
export function requiredModules(scheduler: string): string[] {
  const sched = scheduler === '' ? DEFAULT_IPVS_SCHEDULER : scheduler;
  return ['ip_vs', `ip_vs_${sched}`, 'nf_conntrack', 'dummy'];
}

export interface MissingModule {
  readonly name: string;
  /** What modprobe said (its last line), or why it could not run. */
  readonly reason: string;
}

/** Each required module that is neither loaded nor built in, and that modprobe cannot load. */
export async function missingModules(
  names: readonly string[],
  readings: ModuleReadings,
  commands: CommandRunner,
): Promise<MissingModule[]> {
  const builtin = new Set(readings.builtin());
  const missing: MissingModule[] = [];
  for (const name of names) {
    if (readings.loaded(name) || builtin.has(name)) continue;
    const r = await commands.run('modprobe', ['--', name], { timeoutMs: 10_000 });
    if (r.code === 0) continue;
    const said = r.stderr.trim().split('\n').pop() ?? '';
    missing.push({ name, reason: said === '' ? `modprobe exited ${r.code}` : said });
  }
  return missing;
}

/** What is wrong with the node's ipset tool, or undefined (upstream checks its version against 6.0). */
async function ipsetProblem(commands: CommandRunner): Promise<string | undefined> {
  try {
    const v = await new IPSetClient({ commands }).version();
    return checkMinVersion(v.text) ? undefined : `ipset ${v.text} is older than ${MIN_IPSET_CHECK_VERSION}`;
  } catch (e) {
    return `the ipset tool did not answer: ${errorMessage(e)}`;
  }
}

export interface IPVSRequirementsInput {
  readonly scheduler: string;
  readonly commands: CommandRunner;
  readonly readings: ModuleReadings;
}

/**
 * Undefined when the node has what ipvs mode needs; otherwise one message naming every missing part, for the
 * agent to exit with before it programs anything.
 */
export async function checkIPVSRequirements(input: IPVSRequirementsInput): Promise<string | undefined> {
  const problems: string[] = [];
  const missing = await missingModules(requiredModules(input.scheduler), input.readings, input.commands);
  if (missing.length > 0) {
    const list = missing.map((m) => `${m.name} (${m.reason})`).join(', ');
    problems.push(`the kernel lacks the modules ${list}`);
  }
  const ipset = await ipsetProblem(input.commands);
  if (ipset !== undefined) problems.push(ipset);
  if (problems.length === 0) return undefined;
  return (
    `ipvs mode cannot run on this node: ${problems.join('; ')}. Nothing was programmed. ` +
    'Use mode "nftables" or "iptables", or a kernel built with IP_VS (CONFIG_IP_VS) and its schedulers.'
  );
}

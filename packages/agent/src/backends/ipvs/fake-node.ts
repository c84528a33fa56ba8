// A node's tools for ipvs mode, in memory (unit tests, and `diff --proxy-mode ipvs`): `ip` as far as kube-ipvs0
// needs it (this file), ipset (FakeIPSet), iptables (FakeIptables), each a CommandRunner keeping state, behind one
// runner that sends each command to its fake. Simplifications of the `ip` fake: only the commands DummyDevice
// runs; addresses without scope or flags.
import type { CommandOptions, CommandResult, CommandRunner } from '../../netfilter/command.js';
import { FakeIPSet } from '../../netfilter/ipset/fake.js';
import { FakeIptables } from '../../netfilter/iptables/fake.js';
import type { FakeIptablesOptions } from '../../netfilter/iptables/fake.js';

const ok = (stdout = ''): CommandResult => ({ code: 0, stdout, stderr: '' });
const fail = (code: number, stderr: string): CommandResult => ({ code, stdout: '', stderr });

export class FakeIpLinks implements CommandRunner {
  /** Link name → its addresses with prefix ("198.19.0.1/32"), in the order added. */
  readonly links = new Map<string, string[]>();
  /** Every `ip -batch -` input, in order. */
  readonly batches: string[] = [];

  async run(cmd: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
    if (cmd !== 'ip') return fail(127, `${cmd}: not a command of this fake`);
    const a = args.join(' ');
    let m: RegExpExecArray | null;
    if ((m = /^-o link show dev (\S+)$/.exec(a)))
      return this.links.has(m[1]!)
        ? ok(`1: ${m[1]}: <BROADCAST,NOARP> mtu 1500\n`)
        : fail(1, `Device "${m[1]}" does not exist.\n`);
    if ((m = /^link add (\S+) type dummy$/.exec(a))) {
      if (this.links.has(m[1]!)) return fail(2, 'RTNETLINK answers: File exists\n');
      this.links.set(m[1]!, []);
      return ok();
    }
    if ((m = /^-o -([46]) addr show dev (\S+)$/.exec(a))) return this.show(m[2]!, m[1] === '6');
    if (a === '-batch -') return this.batch(options.stdin ?? '');
    return fail(1, `ip ${a}: not a command of this fake`);
  }

  private show(link: string, v6: boolean): CommandResult {
    const addrs = this.links.get(link);
    if (addrs === undefined) return fail(1, `Device "${link}" does not exist.\n`);
    const lines = addrs
      .filter((x) => x.includes(':') === v6)
      .map(
        (x) => `5: ${link}    ${v6 ? 'inet6' : 'inet'} ${x} scope global ${link}\\       valid_lft forever`,
      );
    return ok(lines.map((l) => l + '\n').join(''));
  }

  private batch(stdin: string): CommandResult {
    this.batches.push(stdin);
    for (const line of stdin.split('\n').filter((l) => l !== '')) {
      const m = /^address (replace|del) (\S+) dev (\S+)( nodad)?$/.exec(line);
      const addrs = m ? this.links.get(m[3]!) : undefined;
      if (!m || addrs === undefined) return fail(1, `Command failed -:${line}\n`);
      const i = addrs.indexOf(m[2]!);
      if (m[1] === 'replace' && i < 0) addrs.push(m[2]!);
      if (m[1] === 'del') {
        if (i < 0) return fail(2, 'RTNETLINK answers: Cannot assign requested address\n');
        addrs.splice(i, 1);
      }
    }
    return ok();
  }
}

/** Every tool a node in ipvs mode runs, each its fake. */
export class FakeIpvsNode implements CommandRunner {
  readonly ip = new FakeIpLinks();
  readonly ipset = new FakeIPSet();
  readonly iptables: FakeIptables;

  /** `iptables`: its fake's options (a legacy back end with a clock, for lock waits). */
  constructor(iptables: FakeIptablesOptions = {}) {
    this.iptables = new FakeIptables(iptables);
  }

  run(cmd: string, args: readonly string[], options?: CommandOptions): Promise<CommandResult> {
    if (cmd === 'ip') return this.ip.run(cmd, args, options);
    if (cmd === 'ipset') return this.ipset.run(cmd, args, options);
    return this.iptables.run(cmd, args, options);
  }
}

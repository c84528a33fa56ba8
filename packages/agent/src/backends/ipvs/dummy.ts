// kube-ipvs0: the dummy link that holds every Service address, so that the kernel takes packets to them as its
// own and hands them to IPVS (upstream's netlink handle: EnsureDummyDevice, EnsureAddressBind, UnbindAddress,
// GetLocalAddresses). Through `ip`, the one tool the project already runs for links.
import { parseIPSloppy } from '../../model/ip.js';
import type { IPFamily } from '../../model/ip.js';
import type { CommandRunner } from '../../netfilter/command.js';
import { DUMMY_DEVICE } from './plan.js';

export class DummyDeviceError extends Error {
  constructor(what: string, detail: string) {
    super(`${DUMMY_DEVICE}: ${what}: ${detail.trim()}`);
    this.name = 'DummyDeviceError';
  }
}

export class DummyDevice {
  constructor(
    private readonly commands: CommandRunner,
    private readonly family: IPFamily,
  ) {}

  /** Creates the link unless it exists; left down, as upstream leaves it (its addresses are local either way). */
  async ensure(): Promise<void> {
    const shown = await this.commands.run('ip', ['-o', 'link', 'show', 'dev', DUMMY_DEVICE]);
    if (shown.code === 0) return;
    const r = await this.commands.run('ip', ['link', 'add', DUMMY_DEVICE, 'type', 'dummy']);
    // Another family's backend may have made it meanwhile.
    if (r.code !== 0 && !/File exists/.test(r.stderr)) throw new DummyDeviceError('cannot create', r.stderr);
  }

  /** This family's addresses on the link, canonical. */
  async addresses(): Promise<Set<string>> {
    const flag = this.family === 'IPv6' ? '-6' : '-4';
    const r = await this.commands.run('ip', ['-o', flag, 'addr', 'show', 'dev', DUMMY_DEVICE]);
    if (r.code !== 0) throw new DummyDeviceError('cannot list addresses', r.stderr);
    const out = new Set<string>();
    for (const m of r.stdout.matchAll(/\binet6? (\S+?)\/\d+/g)) {
      const ip = parseIPSloppy(m[1] ?? '');
      if (ip !== undefined) out.add(ip.text);
    }
    return out;
  }

  /** Adds and removes addresses in one `ip -batch` each; IPv6 ones skip duplicate address detection. */
  async change(add: readonly string[], remove: readonly string[]): Promise<void> {
    const prefix = this.family === 'IPv6' ? 128 : 32;
    const nodad = this.family === 'IPv6' ? ' nodad' : '';
    const lines = [
      ...add.map((a) => `address replace ${a}/${prefix} dev ${DUMMY_DEVICE}${nodad}`),
      ...remove.map((a) => `address del ${a}/${prefix} dev ${DUMMY_DEVICE}`),
    ];
    if (lines.length === 0) return;
    const r = await this.commands.run('ip', ['-batch', '-'], { stdin: lines.join('\n') + '\n' });
    if (r.code !== 0) throw new DummyDeviceError('cannot change addresses', r.stderr);
  }
}

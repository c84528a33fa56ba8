// nfacct objects (extended accounting counters, per network namespace), as iptables mode uses them: rules count
// into them with `-m nfacct --nfacct-name NAME`, and /metrics reads their packet counts at scrape time (upstream
// pkg/proxy/util/nfacct, over netlink; here through Debian's `nfacct` tool, the CommandRunner seam).
import type { CommandRunner } from './command.js';
import { errorMessage } from '../util/error-message.js';

const PACKETS = /\{\s*pkts\s*=\s*(\d+)\s*,/;

export class NfacctClient {
  constructor(private readonly commands: CommandRunner) {}

  /** The counter's packet count, or undefined when it does not exist or cannot be read. */
  async packets(name: string): Promise<number | undefined> {
    const r = await this.commands.run('nfacct', ['get', name]).catch(() => undefined);
    if (r === undefined || r.code !== 0) return undefined;
    const m = PACKETS.exec(r.stdout);
    return m?.[1] === undefined ? undefined : Number(m[1]);
  }

  /** Makes sure the counter exists; resolves an error message when it cannot (no nfacct support, no tool). */
  async ensure(name: string): Promise<string | undefined> {
    if ((await this.packets(name)) !== undefined) return undefined;
    const r = await this.commands.run('nfacct', ['add', name]).catch((e: unknown) => ({
      code: -1,
      stdout: '',
      stderr: errorMessage(e),
    }));
    // Another writer may have made it in between ("Device or resource busy"): what counts is that it exists now.
    if (r.code === 0 || (await this.packets(name)) !== undefined) return undefined;
    return `nfacct add ${name}: ${r.stderr.trim() || `exit ${r.code}`}`;
  }
}

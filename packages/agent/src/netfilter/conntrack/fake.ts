// An in-memory conntrack table behind the CommandRunner seam the executor uses (executor.ts), so that the
// executor's own code runs against it. It answers `conntrack` as Debian's conntrack-tools 1.4.7 does for what
// kube-proxy runs, checked against the real tool by test/netfilter/conntrack/kernel.test.ts:
//   -L [-p PROTO] [-f ipv4|ipv6] [filters] [-o extended]  lists matching flows (all families without -f); the
//      count goes to stderr ("N flow entries have been shown.").
//   -D [same filters]  deletes matching flows and echoes each in the plain format (no "ipv4 2" prefix); exit 1
//      with "0 flow entries have been deleted." when nothing matched.
//   -R FILE  (1.4.6 and later) reads every line first, each a -D command; one unreadable line fails the whole
//      file (exit 2) with nothing deleted; otherwise every line runs, a line matching nothing is no error, deleted
//      flows are echoed and nothing is printed to stderr. Older versions do not know -R (exit 2).
// Filters: -s/--orig-src, -d/--orig-dst, -r/--reply-src, -q/--reply-dst, and, after -p, --sport/--orig-port-src,
// --dport/--orig-port-dst, --reply-port-src, --reply-port-dst. A filter address of another family than -f is
// "mismatched address family" (exit 2), an unknown option is exit 2, as with the tool.
//
// Simplifications: flows never time out by themselves (expireAfterNextListing() makes them); timeouts, state
// flags, marks and zones are printed as constants; the words of a tool older than 1.4.6 refusing -R are
// approximated (only its exit code matters); only kube-proxy's verbs are implemented.
import { readFile } from 'node:fs/promises';
import type { IPFamily } from '../../model/ip.js';
import { parseIPSloppy } from '../../model/ip.js';
import type { CommandOptions, CommandResult, CommandRunner } from '../command.js';
import type { ConntrackFlow, ConntrackTuple } from './flow.js';

/** One UDP flow as the typed API takes it; the reply's destination defaults to the original source. */
export interface UdpFlowSpec {
  /** Checked against the addresses when given; otherwise taken from them. */
  readonly family?: IPFamily;
  readonly origSrc: string;
  readonly origDst: string;
  readonly origSport: number;
  readonly origDport: number;
  /** Who answers: the endpoint the flow was DNATed to. */
  readonly replySrc: string;
  readonly replySport: number;
  readonly replyDst?: string;
  readonly replyDport?: number;
}

export interface FakeConntrackOptions {
  /** What the tool reports; below 1.4.6 it has no -R (default "1.4.7", Debian bookworm's). */
  readonly version?: string;
}

/** A batch file the tool loaded (`-R FILE`), as read while the command ran. */
export interface FakeConntrackBatch {
  readonly file: string;
  readonly lines: readonly string[];
}

export type FakeConntrackCommand = '-L' | '-D' | '-R';

interface Filter {
  family?: IPFamily;
  protocol?: string;
  origSrc?: string;
  origDst?: string;
  replySrc?: string;
  replyDst?: string;
  origSport?: number;
  origDport?: number;
  replySport?: number;
  replyDport?: number;
}

interface Parsed {
  readonly command: FakeConntrackCommand;
  readonly filter: Filter;
  readonly file?: string;
  readonly extended: boolean;
}

const L3_NUMBER: Readonly<Record<IPFamily, number>> = { IPv4: 2, IPv6: 10 };
const L4_NUMBER: Readonly<Record<string, number>> = { icmp: 1, tcp: 6, udp: 17, dccp: 33, sctp: 132 };
const PROTOCOLS_WITH_PORTS = new Set(['tcp', 'udp', 'udplite', 'sctp', 'dccp']);

const ADDRESS_OPTIONS: Readonly<Record<string, 'origSrc' | 'origDst' | 'replySrc' | 'replyDst'>> = {
  '-s': 'origSrc',
  '--src': 'origSrc',
  '--orig-src': 'origSrc',
  '-d': 'origDst',
  '--dst': 'origDst',
  '--orig-dst': 'origDst',
  '-r': 'replySrc',
  '--reply-src': 'replySrc',
  '-q': 'replyDst',
  '--reply-dst': 'replyDst',
};
const PORT_OPTIONS: Readonly<Record<string, 'origSport' | 'origDport' | 'replySport' | 'replyDport'>> = {
  '--sport': 'origSport',
  '--orig-port-src': 'origSport',
  '--dport': 'origDport',
  '--orig-port-dst': 'origDport',
  '--reply-port-src': 'replySport',
  '--reply-port-dst': 'replyDport',
};
const COMMANDS: Readonly<Record<string, FakeConntrackCommand>> = {
  '-L': '-L',
  '--dump': '-L',
  '-D': '-D',
  '--delete': '-D',
  '-R': '-R',
  '--load-file': '-R',
};

function versionAtLeast(version: string, major: number, minor: number, patch: number): boolean {
  const [a = 0, b = 0, c = 0] = version.split('.').map(Number);
  return a !== major ? a > major : b !== minor ? b > minor : c >= patch;
}

function canonical(ip: string): { family: IPFamily; text: string } {
  const p = parseIPSloppy(ip);
  if (!p) throw new Error(`fake conntrack: not an IP: ${ip}`);
  return p;
}

function tupleText(t: ConntrackTuple): string {
  const ports = t.sport !== undefined && t.dport !== undefined ? ` sport=${t.sport} dport=${t.dport}` : '';
  return `src=${t.src} dst=${t.dst}${ports}`;
}

/** One line as the tool prints it: `-o extended` adds the layer-3 name and number in front. */
function flowLine(f: ConntrackFlow, extended: boolean): string {
  const l3 = extended ? `${(f.family === 'IPv6' ? 'ipv6' : 'ipv4').padEnd(8)} ${L3_NUMBER[f.family]} ` : '';
  const state = f.protocol === 'tcp' ? ' ESTABLISHED' : '';
  const timeout = f.protocol === 'tcp' ? 431999 : 30;
  return (
    `${l3}${f.protocol.padEnd(8)} ${L4_NUMBER[f.protocol] ?? 0} ${timeout}${state} ` +
    `${tupleText(f.original)} ${tupleText(f.reply)} mark=0 use=1`
  );
}

function matches(f: ConntrackFlow, q: Filter): boolean {
  return (
    (q.family === undefined || f.family === q.family) &&
    (q.protocol === undefined || f.protocol === q.protocol) &&
    (q.origSrc === undefined || f.original.src === q.origSrc) &&
    (q.origDst === undefined || f.original.dst === q.origDst) &&
    (q.replySrc === undefined || f.reply.src === q.replySrc) &&
    (q.replyDst === undefined || f.reply.dst === q.replyDst) &&
    (q.origSport === undefined || f.original.sport === q.origSport) &&
    (q.origDport === undefined || f.original.dport === q.origDport) &&
    (q.replySport === undefined || f.reply.sport === q.replySport) &&
    (q.replyDport === undefined || f.reply.dport === q.replyDport)
  );
}

export class FakeConntrack implements CommandRunner {
  /** Every batch file loaded with -R, in order (read while the command ran; the caller may remove it after). */
  readonly batches: FakeConntrackBatch[] = [];
  readonly version: string;
  #flows: ConntrackFlow[] = [];
  readonly #failures = new Map<FakeConntrackCommand, CommandResult[]>();
  #expiries: ((f: ConntrackFlow) => boolean)[] = [];

  constructor(options: FakeConntrackOptions = {}) {
    this.version = options.version ?? '1.4.7';
  }

  /** Whether this version knows -R (conntrack-tools 1.4.6 added it). */
  get supportsBatch(): boolean {
    return versionAtLeast(this.version, 1, 4, 6);
  }

  /** Puts one UDP flow in the table (as traffic DNATed to `replySrc:replySport` would); returns it as listed. */
  addUdpFlow(spec: UdpFlowSpec): ConntrackFlow {
    const flow: ConntrackFlow = {
      family: spec.family ?? canonical(spec.origSrc).family,
      protocol: 'udp',
      original: { src: spec.origSrc, dst: spec.origDst, sport: spec.origSport, dport: spec.origDport },
      reply: {
        src: spec.replySrc,
        dst: spec.replyDst ?? spec.origSrc,
        sport: spec.replySport,
        dport: spec.replyDport ?? spec.origSport,
      },
    };
    return this.add(flow);
  }

  /** Puts any flow in the table (TCP, SCTP, …); addresses are stored canonical, as the kernel prints them. */
  add(flow: ConntrackFlow): ConntrackFlow {
    const tuple = (t: ConntrackTuple): ConntrackTuple => {
      const src = canonical(t.src);
      const dst = canonical(t.dst);
      if (src.family !== flow.family || dst.family !== flow.family) {
        throw new Error(`fake conntrack: ${t.src} → ${t.dst} is not ${flow.family}`);
      }
      return { ...t, src: src.text, dst: dst.text };
    };
    const stored: ConntrackFlow = {
      family: flow.family,
      protocol: flow.protocol.toLowerCase(),
      original: tuple(flow.original),
      reply: tuple(flow.reply),
    };
    if (this.#flows.some((f) => sameOriginal(f, stored))) {
      throw new Error(`fake conntrack: the flow exists: ${flowLine(stored, true)}`);
    }
    this.#flows.push(stored);
    return stored;
  }

  /** The table's flows (one family's, when given), oldest first. */
  flows(family?: IPFamily): ConntrackFlow[] {
    return this.#flows.filter((f) => family === undefined || f.family === family);
  }

  /**
   * The next `command` run fails with the tool's banner and these words, touching nothing (default: what an
   * unprivileged caller sees). Failures queue up, one per run.
   */
  failNext(
    command: FakeConntrackCommand,
    words = 'Operation failed: Operation not permitted',
    code = 1,
  ): void {
    const queue = this.#failures.get(command) ?? [];
    queue.push({ code, stdout: '', stderr: `${this.#banner()}${words}\n` });
    this.#failures.set(command, queue);
  }

  /**
   * Flows that match go away right after the next listing has been printed, as an idle UDP flow times out
   * between a pass's listing and its deletion.
   */
  expireAfterNextListing(match: (flow: ConntrackFlow) => boolean): void {
    this.#expiries.push(match);
  }

  async run(cmd: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
    void options;
    if (cmd !== 'conntrack' && !cmd.endsWith('/conntrack')) {
      return { code: 127, stdout: '', stderr: `${cmd}: not found (fake conntrack)\n` };
    }
    if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
      return { code: 0, stdout: `conntrack v${this.version} (conntrack-tools)\n`, stderr: '' };
    }
    const parsed = this.#parse(args);
    if (typeof parsed === 'string') return this.#parameterProblem(parsed);
    const failure = this.#failures.get(parsed.command)?.shift();
    if (failure) return failure;
    switch (parsed.command) {
      case '-L':
        return this.#list(parsed);
      case '-D': {
        const deleted = this.#delete(parsed.filter);
        const stderr = `${this.#banner()}${deleted.length} flow entries have been deleted.\n`;
        return { code: deleted.length > 0 ? 0 : 1, stdout: this.#echo(deleted, parsed.extended), stderr };
      }
      case '-R':
        return this.#load(parsed.file ?? '');
    }
  }

  #banner(): string {
    return `conntrack v${this.version} (conntrack-tools): `;
  }

  #parameterProblem(words: string): CommandResult {
    return {
      code: 2,
      stdout: '',
      stderr: `${this.#banner()}${words}\nTry \`conntrack -h' or 'conntrack --help' for more information.\n`,
    };
  }

  #echo(flows: readonly ConntrackFlow[], extended: boolean): string {
    return flows.map((f) => flowLine(f, extended) + '\n').join('');
  }

  #list(p: Parsed): CommandResult {
    const shown = this.#flows.filter((f) => matches(f, p.filter));
    const result: CommandResult = {
      code: 0,
      stdout: this.#echo(shown, p.extended),
      stderr: `${this.#banner()}${shown.length} flow entries have been shown.\n`,
    };
    const expiries = this.#expiries;
    this.#expiries = [];
    this.#flows = this.#flows.filter((f) => !expiries.some((m) => m(f)));
    return result;
  }

  #delete(filter: Filter): ConntrackFlow[] {
    const deleted = this.#flows.filter((f) => matches(f, filter));
    this.#flows = this.#flows.filter((f) => !matches(f, filter));
    return deleted;
  }

  async #load(file: string): Promise<CommandResult> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      return this.#parameterProblem(`Failed to open file ${file} for reading`);
    }
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    this.batches.push({ file, lines });
    // The tool parses the whole file before it runs any line.
    const commands: Parsed[] = [];
    for (const line of lines) {
      const p = this.#parse(line.trim().split(/\s+/), false);
      if (typeof p === 'string') return this.#parameterProblem(p);
      commands.push(p);
    }
    let stdout = '';
    for (const p of commands) stdout += this.#echo(this.#delete(p.filter), p.extended);
    return { code: 0, stdout, stderr: '' };
  }

  /** The arguments as the tool reads them, or the tool's complaint. */
  #parse(args: readonly string[], allowLoad = true): Parsed | string {
    let command: FakeConntrackCommand | undefined;
    let file: string | undefined;
    let extended = false;
    const filter: Filter = {};
    const addressFamilies: IPFamily[] = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as string;
      const value = (): string | undefined => args[++i];
      const known = COMMANDS[a];
      if (known !== undefined) {
        if (command !== undefined) return 'Invalid parameters';
        if (known === '-R') {
          // getopt refuses an option the version does not have.
          if (!this.supportsBatch) return `invalid option -- 'R'`;
          if (!allowLoad) return `unsupported command in batch: ${a}`;
          file = value();
          if (file === undefined) return `option requires an argument -- 'R'`;
        }
        command = known;
      } else if (a === '-p' || a === '--proto') {
        const proto = value()?.toLowerCase();
        if (proto === undefined || !(proto in L4_NUMBER)) return `proto \`${proto ?? ''}' not found`;
        filter.protocol = proto;
      } else if (a === '-f' || a === '--family') {
        const v = value();
        if (v !== 'ipv4' && v !== 'ipv6') return `\`${v ?? ''}' unsupported protocol`;
        filter.family = v === 'ipv6' ? 'IPv6' : 'IPv4';
      } else if (a === '-o' || a === '--output') {
        extended = (value() ?? '').split(',').includes('extended');
      } else if (ADDRESS_OPTIONS[a] !== undefined) {
        const ip = parseIPSloppy(value() ?? '');
        if (!ip) return 'Bad parameter';
        filter[ADDRESS_OPTIONS[a]] = ip.text;
        addressFamilies.push(ip.family);
      } else if (PORT_OPTIONS[a] !== undefined && PROTOCOLS_WITH_PORTS.has(filter.protocol ?? '')) {
        // Port options belong to the protocol: before -p (or for ICMP) the tool does not know them.
        const v = value() ?? '';
        if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) return `invalid port ${v}`;
        filter[PORT_OPTIONS[a]] = Number(v);
      } else {
        return `unknown option \`${a}'`;
      }
    }
    if (command === undefined) return 'no command specified';
    const family = filter.family ?? addressFamilies[0];
    if (addressFamilies.some((f) => f !== family)) return 'mismatched address family';
    if (family !== undefined) filter.family = family;
    return { command, filter, extended, ...(file !== undefined ? { file } : {}) };
  }
}

function sameOriginal(a: ConntrackFlow, b: ConntrackFlow): boolean {
  return (
    a.family === b.family &&
    a.protocol === b.protocol &&
    a.original.src === b.original.src &&
    a.original.dst === b.original.dst &&
    a.original.sport === b.original.sport &&
    a.original.dport === b.original.dport
  );
}

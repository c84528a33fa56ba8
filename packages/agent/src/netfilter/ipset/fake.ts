// An in-memory ipset behind the CommandRunner seam the client uses, so IPSetClient runs its own code against it. It
// answers `ipset` as Debian's ipset 7.17 does for what the agent runs, checked against the tool by
// test/netfilter/ipset/kernel.test.ts:
//   version; list -n; save [NAME]; create/add/del/flush/destroy as one command; restore [-exist] from stdin.
// It keeps state per set (type, family, options, entries as `ipset save` prints them) and fails where ipset does:
// an add to a missing set, an address of the other family, a port out of range, a /0 net, a create that clashes
// with an existing set. `-exist` makes a matching create, an add of an entry that is there, a delete of one that is
// not and a destroy of a missing set no errors. Like the tool, `create -exist` compares the type, maxelem, range
// and the comment option but not the family or the hash size (a kernel quirk: an inet set passes for inet6).
//
// A restore applies line by line, as the tool does. The tool gathers consecutive add (or del) lines of one set into
// one message to the kernel, sent when another command comes; when a line fails in the tool itself (syntax, a
// missing set, a family mismatch) the gathered, unsent lines are lost with it, while a line the kernel refuses
// leaves every line before it applied. The fake does the same. Error text: "ipset v7.17: Error in line N: …";
// port syntax errors and unknown words come without a line number, as the tool prints them.
//
// Simplifications: the tool's 8 KiB message buffer (a long run of adds is sent in several messages) is not
// modelled, nor a kernel refusal of a gathered line reported only once the next command arrives; service names
// for ports, protocol numbers and ICMP types, and the CIDRs and ranges the tool expands in an IP part are refused;
// an IPv4-mapped IPv6 address is taken as IPv4; `list` prints only names; `save` lists sets in creation order and
// hash entries in insertion order (the kernel in its hash order); destroying a set that an iptables rule still
// matches succeeds (there is no iptables here: the kernel refuses it as "in use by a kernel component").
import type { IPFamily } from '../../model/ip.js';
import type { CommandOptions, CommandResult, CommandRunner } from '../command.js';
import { createArgs, splitIPSetLine } from './restore.js';
import { parseIPSloppy } from '../../model/ip.js';
import type { IPSetProtocol, IPSetType, PortRange } from './sets.js';
import {
  DEFAULT_HASH_SIZE,
  DEFAULT_MAX_ELEM,
  entryText,
  IPSET_MAX_NAME_LENGTH,
  isIPSetType,
} from './sets.js';

interface FakeSet {
  readonly name: string;
  readonly type: IPSetType;
  readonly family: IPFamily;
  readonly hashSize: number;
  readonly maxElem: number;
  readonly portRange: PortRange | undefined;
  readonly comment: boolean;
  readonly entries: Set<string>;
}

/** Where a failure arose: in the tool (its pending lines are lost) or in the kernel. */
interface Failure {
  readonly stage: 'tool' | 'kernel';
  readonly message: string;
  /** 2 for a usage error, else 1. */
  readonly exit?: 1 | 2;
  /** The tool prints these without "Error in line N". */
  readonly lineless?: boolean;
}

type Command =
  | { readonly verb: 'create'; readonly set: FakeSet }
  | { readonly verb: 'add' | 'del'; readonly set: FakeSet; readonly entry: string; readonly refusal?: string }
  | { readonly verb: 'flush' | 'destroy'; readonly name: string | undefined };

export interface FakeIPSetCall {
  readonly args: readonly string[];
  readonly stdin?: string;
}

/** One set as the fake holds it, for tests. */
export interface FakeIPSetState {
  readonly type: IPSetType;
  /** Absent for bitmap:port, which has none. */
  readonly family?: IPFamily;
  readonly entries: readonly string[];
}

const VERSION = '7.17';
const PREFIX = `ipset v${VERSION}: `;
const USAGE_HINT = "\nTry `ipset help' for more information.";
const NO_SUCH_SET = 'The set with the given name does not exist';
const CLASH = 'Set cannot be created: set with the same name already exists';

const tool = (message: string, extra: Partial<Failure> = {}): Failure => ({
  stage: 'tool',
  message,
  ...extra,
});
const kernel = (message: string): Failure => ({ stage: 'kernel', message });
const usage = (message: string): Failure => tool(message + USAGE_HINT, { exit: 2, lineless: true });
const ok = (stdout = ''): CommandResult => ({ code: 0, stdout, stderr: '' });

export class FakeIPSet implements CommandRunner {
  readonly calls: FakeIPSetCall[] = [];
  private readonly sets = new Map<string, FakeSet>();

  /** Every set, in creation order, with its entries as `ipset save` prints them. */
  state(): Map<string, FakeIPSetState> {
    const out = new Map<string, FakeIPSetState>();
    for (const s of this.sets.values()) {
      const entries = [...s.entries];
      out.set(
        s.name,
        s.type === 'bitmap:port' ? { type: s.type, entries } : { type: s.type, family: s.family, entries },
      );
    }
    return out;
  }

  async run(cmd: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
    this.calls.push(
      options.stdin === undefined ? { args: [...args] } : { args: [...args], stdin: options.stdin },
    );
    if (cmd !== 'ipset') return { code: 127, stdout: '', stderr: `${cmd}: not found (fake ipset)\n` };
    const exist = args.includes('-exist');
    const words = args.filter((a) => a !== '-exist');
    switch (words[0]) {
      case 'version':
        return ok(`ipset v${VERSION}, protocol version: 7\n`);
      case 'list':
        return this.list(words.slice(1));
      case 'save':
        return this.save(words.slice(1));
      case 'restore':
        return this.restore(options.stdin ?? '', exist);
      default:
        return this.single(words, exist);
    }
  }

  private list(words: readonly string[]): CommandResult {
    if (words[0] !== '-n' || words.length > 1) return failed(usage(`Unknown argument ${words.at(-1) ?? ''}`));
    return ok([...this.sets.keys()].map((n) => n + '\n').join(''));
  }

  private save(words: readonly string[]): CommandResult {
    if (words.length > 1) return failed(usage(`Unknown argument ${words[1]}`));
    const name = words[0];
    if (name !== undefined && !this.sets.has(name)) return failed(kernel(NO_SUCH_SET));
    const sets = name === undefined ? [...this.sets.values()] : [this.sets.get(name) as FakeSet];
    return ok(sets.map(savedLines).join(''));
  }

  private single(words: readonly string[], exist: boolean): CommandResult {
    const parsed = this.parse(words);
    if ('stage' in parsed) return failed(parsed);
    const failure = this.execute(parsed, exist, []);
    return failure ? failed(failure) : ok();
  }

  /** Applies `input` line by line; see the file comment for what a failure leaves applied. */
  private restore(input: string, exist: boolean): CommandResult {
    let pending: (() => void)[] = [];
    let batch: string | undefined;
    const lines = input.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const words = splitIPSetLine(lines[i] as string);
      if (words.length === 0 || (words[0] as string).startsWith('#')) continue;
      const parsed = this.parse(words);
      if ('stage' in parsed) {
        for (const undo of pending.reverse()) undo();
        return failed(parsed, i + 1);
      }
      const key =
        parsed.verb === 'add' || parsed.verb === 'del' ? `${parsed.verb} ${parsed.set.name}` : undefined;
      if (key === undefined || key !== batch) pending = []; // the gathered lines go to the kernel now
      batch = key;
      const failure = this.execute(parsed, exist, pending);
      if (failure) return failed(failure, i + 1);
    }
    return ok();
  }

  /** What the tool does before anything reaches the kernel: read the words, look up the set, read the entry. */
  private parse(words: readonly string[]): Command | Failure {
    const [verb, name, ...rest] = words;
    switch (verb) {
      case 'create':
        return parseCreate(name, rest);
      case 'add':
      case 'del': {
        if (name === undefined || rest[0] === undefined) {
          return usage(
            `Missing ${name === undefined ? 'mandatory' : 'second mandatory'} argument to command ${verb}`,
          );
        }
        const set = this.sets.get(name);
        if (set === undefined) return tool(NO_SUCH_SET);
        const element = parseElement(set, rest[0]);
        if ('stage' in element) return element;
        return { verb, set, ...element };
      }
      case 'flush':
      case 'destroy':
        return { verb, name };
      default:
        return usage(`No command specified: unknown argument ${verb ?? ''}`);
    }
  }

  /** What the kernel does; `undo` collects how to take an add or del back while its message is unsent. */
  private execute(c: Command, exist: boolean, undo: (() => void)[]): Failure | undefined {
    switch (c.verb) {
      case 'create':
        return this.create(c.set, exist);
      case 'add':
      case 'del':
        return changeEntry(c, exist, undo);
      case 'flush':
      case 'destroy':
        return this.flushOrDestroy(c.verb, c.name, exist);
    }
  }

  private create(set: FakeSet, exist: boolean): Failure | undefined {
    const old = this.sets.get(set.name);
    if (old === undefined) {
      this.sets.set(set.name, set);
      return undefined;
    }
    const alike =
      old.type === set.type &&
      old.maxElem === set.maxElem &&
      old.comment === set.comment &&
      old.portRange?.first === set.portRange?.first &&
      old.portRange?.last === set.portRange?.last;
    return exist && alike ? undefined : kernel(CLASH);
  }

  private flushOrDestroy(
    verb: 'flush' | 'destroy',
    name: string | undefined,
    exist: boolean,
  ): Failure | undefined {
    const targets = name === undefined ? [...this.sets.values()] : [this.sets.get(name)];
    for (const set of targets) {
      if (set === undefined) return verb === 'destroy' && exist ? undefined : kernel(NO_SUCH_SET);
      if (verb === 'flush') set.entries.clear();
      else this.sets.delete(set.name);
    }
    return undefined;
  }
}

function changeEntry(
  c: Extract<Command, { verb: 'add' | 'del' }>,
  exist: boolean,
  undo: (() => void)[],
): Failure | undefined {
  const { set, entry } = c;
  if (c.refusal !== undefined) return kernel(c.refusal);
  const present = set.entries.has(entry);
  if (c.verb === 'add') {
    if (present) return exist ? undefined : kernel("Element cannot be added to the set: it's already added");
    if (set.type !== 'bitmap:port' && set.entries.size >= set.maxElem) {
      return kernel('Hash is full, cannot add more elements');
    }
    set.entries.add(entry);
    undo.push(() => set.entries.delete(entry));
    return undefined;
  }
  if (!present) return exist ? undefined : kernel("Element cannot be deleted from the set: it's not added");
  set.entries.delete(entry);
  undo.push(() => set.entries.add(entry));
  return undefined;
}

function failed(f: Failure, line?: number): CommandResult {
  const where = line === undefined || f.lineless ? '' : `Error in line ${line}: `;
  return { code: f.exit ?? 1, stdout: '', stderr: `${PREFIX}${where}${f.message}\n` };
}

function savedLines(set: FakeSet): string {
  const spec = { ...set, comment: '' };
  let header = createArgs(spec).join(' ');
  if (set.type !== 'bitmap:port') header += ' bucketsize 12 initval 0x00000000';
  if (set.comment) header += ' comment';
  const entries = [...set.entries];
  if (set.type === 'bitmap:port') entries.sort((a, b) => Number(a) - Number(b));
  return [header, ...entries.map((e) => `add ${set.name} ${e}`)].map((l) => l + '\n').join('');
}

interface CreateOptions {
  family: IPFamily;
  hashSize: number;
  maxElem: number;
  portRange: PortRange | undefined;
  comment: boolean;
}

// The create words each kind of type takes, and what each does with its value (true: it was readable).
type OptionReader = (o: CreateOptions, value: string) => boolean;
const setNumber =
  (key: 'hashSize' | 'maxElem'): OptionReader =>
  (o, v) =>
    /^\d+$/.test(v) && ((o[key] = Number(v)), true);
const HASH_OPTIONS: Readonly<Record<string, OptionReader>> = {
  family: (o, v) => (v === 'inet' || v === 'inet6') && ((o.family = v === 'inet6' ? 'IPv6' : 'IPv4'), true),
  hashsize: setNumber('hashSize'),
  maxelem: setNumber('maxElem'),
  // What `ipset save` prints back; accepted and not kept.
  bucketsize: (_o, v) => /^\d+$/.test(v),
  initval: (_o, v) => /^0x[0-9a-f]+$/i.test(v),
};
const BITMAP_OPTIONS: Readonly<Record<string, OptionReader>> = {
  range: (o, v) => {
    const m = /^(\d+)-(\d+)$/.exec(v);
    if (m) o.portRange = { first: Number(m[1]), last: Number(m[2]) };
    return m !== null;
  },
};

function parseCreateWords(type: IPSetType, words: readonly string[]): CreateOptions | Failure {
  const o: CreateOptions = {
    family: 'IPv4',
    hashSize: DEFAULT_HASH_SIZE,
    maxElem: DEFAULT_MAX_ELEM,
    portRange: undefined,
    comment: false,
  };
  const readers = type === 'bitmap:port' ? BITMAP_OPTIONS : HASH_OPTIONS;
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (word === 'comment') {
      o.comment = true;
      continue;
    }
    const read = Object.hasOwn(readers, word) ? readers[word] : undefined;
    if (read === undefined) return usage(`Unknown argument: \`${word}'`);
    if (!read(o, words[++i] ?? '')) return tool(`Syntax error: cannot parse ${word} ${words[i] ?? ''}`);
  }
  if (type === 'bitmap:port' && o.portRange === undefined)
    return usage("Mandatory option `range' is missing");
  return o;
}

function parseCreate(name: string | undefined, words: readonly string[]): Command | Failure {
  const [type, ...options] = words;
  if (name === undefined || type === undefined) return usage('Missing mandatory argument');
  if (name.length > IPSET_MAX_NAME_LENGTH) {
    return tool(`Syntax error: setname '${name}' is longer than ${IPSET_MAX_NAME_LENGTH} characters`);
  }
  if (!isIPSetType(type)) return tool(`Syntax error: typename '${type}' is unknown`);
  const o = parseCreateWords(type, options);
  if ('stage' in o) return o;
  return { verb: 'create', set: { name, type, ...o, entries: new Set() } };
}

// Entries: what the tool's parser accepts for each type, turned into the text `ipset save` prints (entryText).
interface Element {
  readonly entry: string;
  /** A refusal that comes from the kernel once the line is sent (the tool parsed it). */
  readonly refusal?: string;
}

const PROTOCOL_WORDS: Readonly<Record<string, IPSetProtocol>> = {
  tcp: 'tcp',
  udp: 'udp',
  sctp: 'sctp',
  // /etc/protocols' aliases, which the tool's getprotobyname() also finds.
  TCP: 'tcp',
  UDP: 'udp',
  SCTP: 'sctp',
};

function readIP(set: FakeSet, text: string): string | Failure {
  const parsed = parseIPSloppy(text);
  if (parsed === undefined || parsed.family !== set.family) {
    return tool(`Syntax error: cannot parse ${text}: resolving to ${set.family} address failed`);
  }
  return parsed.text;
}

/** "proto:port" or "port" (TCP); the tool reports a bad port in three lines and without the line number. */
function readPort(text: string): { protocol: IPSetProtocol; port: number } | Failure {
  const m = /^([^:]+):(.+)$/.exec(text);
  const [word, portText] = m ? [m[1] as string, m[2] as string] : ['tcp', text];
  const protocol = Object.hasOwn(PROTOCOL_WORDS, word) ? PROTOCOL_WORDS[word] : undefined;
  if (protocol === undefined) return tool(`Syntax error: cannot parse '${word}' as a protocol`);
  const numeric = /^-?\d+$/.test(portText);
  const port = Number(portText);
  if (numeric && port >= 0 && port <= 65535) return { protocol, port };
  const why = numeric ? 'is out of range 0-65535' : 'is invalid as number';
  return tool(
    `Syntax error: '${portText}' ${why}\nSyntax error: '${word}' is invalid as number\n` +
      `cannot parse '${portText}' as a ${word} port`,
    { lineless: true },
  );
}

function readPlainIP(set: FakeSet, text: string): string | Failure {
  if (text.includes('/')) return tool(`Syntax error: plain IP address must be supplied: ${text}`);
  return readIP(set, text);
}

function readNet(set: FakeSet, text: string): Element | Failure {
  const [address = '', prefix, ...more] = text.split('/');
  const max = set.family === 'IPv4' ? 32 : 128;
  if (more.length > 0 || (prefix !== undefined && !/^\d+$/.test(prefix))) {
    return tool(`Syntax error: '${prefix ?? ''}' is invalid as number`);
  }
  if (prefix !== undefined && Number(prefix) > max)
    return tool(`Syntax error: '${prefix}' is out of range 0-${max}`);
  const ip = readIP(set, address);
  if (typeof ip !== 'string') return ip;
  if (prefix !== undefined && Number(prefix) === 0) {
    return { entry: text, refusal: 'The value of the CIDR parameter of the IP address is invalid' };
  }
  return { entry: prefix === undefined ? ip : `${ip}/${prefix}` };
}

const ELEMENT_COUNT: Readonly<Record<IPSetType, number>> = {
  'hash:ip': 1,
  'hash:ip,port': 2,
  'hash:ip,port,ip': 3,
  'hash:ip,port,net': 3,
  'bitmap:port': 1,
};

function elementCountProblem(type: IPSetType, text: string, parts: readonly string[]): Failure | undefined {
  const want = ELEMENT_COUNT[type];
  if (parts.length > want) {
    const seps = ['', 'Elem separator', 'Two elem separators', 'Three elem separators'][parts.length - 1];
    const supports = ['none', 'one', 'two'][want - 1];
    return tool(`Syntax error: ${seps} in ${text}, but settype ${type} supports ${supports}.`);
  }
  if (parts.length < want || parts[0] === '') {
    return tool(`Syntax error: ${parts.length < 3 ? 'Second' : 'Third'} element is missing from ${text}.`);
  }
  return undefined;
}

function readBitmapPort(set: FakeSet, text: string): Element | Failure {
  const p = readPort(text);
  if ('stage' in p) return p;
  const { first, last } = set.portRange ?? { first: 0, last: 65535 };
  const refusal = p.port < first || p.port > last ? 'Element is out of the range of the set' : undefined;
  return { entry: entryText('bitmap:port', { port: p.port }), ...(refusal && { refusal }) };
}

function readIPPortElement(set: FakeSet, text: string, parts: readonly string[]): Element | Failure {
  const ip = readIP(set, parts[0] as string);
  if (typeof ip !== 'string') return ip;
  const p = readPort(parts[1] as string);
  if ('stage' in p) return p;
  const base = { ip, ...p };
  if (set.type === 'hash:ip,port') return { entry: entryText('hash:ip,port', base) };
  if (set.type === 'hash:ip,port,ip') {
    const ip2 = readPlainIP(set, parts[2] as string);
    return typeof ip2 === 'string' ? { entry: entryText('hash:ip,port,ip', { ...base, ip2 }) } : ip2;
  }
  const net = readNet(set, parts[2] as string);
  if ('stage' in net) return net;
  return { ...net, entry: net.refusal ? text : entryText('hash:ip,port,net', { ...base, net: net.entry }) };
}

/** The tool's reading of one entry of `set`. */
function parseElement(set: FakeSet, text: string): Element | Failure {
  const parts = text.split(',');
  const problem = elementCountProblem(set.type, text, parts);
  if (problem) return problem;
  if (set.type === 'bitmap:port') return readBitmapPort(set, text);
  if (set.type === 'hash:ip') {
    const ip = readPlainIP(set, text);
    return typeof ip === 'string' ? { entry: ip } : ip;
  }
  return readIPPortElement(set, text, parts);
}

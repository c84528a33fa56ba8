// Runs the `ipset` tool through the CommandRunner seam, as upstream's pkg/proxy/ipvs/ipset does, but with one
// `ipset restore -exist` per sync instead of one process per entry. Results are values; a failure is an IPSetError
// that says what was run, what ipset said and, for a restore, which input line it named.
import type { CommandResult, CommandRunner } from '../command.js';
import type { SavedIPSet } from './restore.js';
import { parseIPSetSave } from './restore.js';
import { allKubeIPSetNames } from './sets.js';

/** Upstream's MinIPSetCheckVersion: IPv6 sets need ipset 6.x. */
export const MIN_IPSET_CHECK_VERSION = '6.0';

export type IPSetErrorKind = 'version' | 'list' | 'save' | 'restore' | 'destroy';

/** A failed ipset command, with what was run and what it said. */
export class IPSetError extends Error {
  constructor(
    readonly kind: IPSetErrorKind,
    readonly args: readonly string[],
    readonly code: number,
    readonly stderr: string,
    /** For a restore: the input line ipset named ("Error in line N"), when it named one. */
    readonly failedLine?: number,
    /** That line's text. */
    readonly failedText?: string,
  ) {
    super(ipsetErrorMessage(args, code, stderr, failedLine, failedText));
    this.name = 'IPSetError';
  }
}

/** ipset's complaint without its "ipset v7.17: " and "Error in line N: " prefixes, on one line. */
export function ipsetReason(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('Try `ipset help'));
  return lines
    .join('; ')
    .replace(/^ipset v[\d.]+:\s*/, '')
    .replace(/^Error in line \d+:\s*/, '');
}

function ipsetErrorMessage(
  args: readonly string[],
  code: number,
  stderr: string,
  failedLine: number | undefined,
  failedText: string | undefined,
): string {
  const where = failedLine === undefined ? '' : ` line ${failedLine} (${JSON.stringify(failedText ?? '')})`;
  return `ipset ${args.join(' ')}:${where} ${ipsetReason(stderr) || 'no output'} (exit ${code})`;
}

export interface IPSetVersion {
  readonly major: number;
  readonly minor: number;
  /** "7.17" */
  readonly text: string;
}

/** Reads `ipset version` output ("ipset v7.17, protocol version: 7"). */
export function parseIPSetVersion(output: string): IPSetVersion | undefined {
  const m = /\bv(\d+)\.(\d+)/.exec(output);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), text: `${m[1]}.${m[2]}` };
}

/**
 * Whether a version string is at least MIN_IPSET_CHECK_VERSION, read as upstream's utilversion.ParseGeneric reads
 * it: an optional "v", then at least two dot-separated numbers ("7" and "total junk" are not versions).
 */
export function checkMinVersion(version: string, min: string = MIN_IPSET_CHECK_VERSION): boolean {
  const parse = (s: string): number[] | undefined => {
    const m = /^\s*v?(\d+(?:\.\d+)+)(?![\d.])/.exec(s);
    return m ? (m[1] as string).split('.').map(Number) : undefined;
  };
  const have = parse(version);
  const want = parse(min);
  if (have === undefined || want === undefined) return false;
  for (let i = 0; i < Math.max(have.length, want.length); i++) {
    const d = (have[i] ?? 0) - (want[i] ?? 0);
    if (d !== 0) return d > 0;
  }
  return true;
}

export interface IPSetClientOptions {
  readonly commands: CommandRunner;
  /** The tool (default "ipset", found on PATH). */
  readonly binary?: string;
}

export class IPSetClient {
  private readonly commands: CommandRunner;
  private readonly binary: string;

  constructor(options: IPSetClientOptions) {
    this.commands = options.commands;
    this.binary = options.binary ?? 'ipset';
  }

  private exec(args: readonly string[], stdin?: string): Promise<CommandResult> {
    return this.commands.run(this.binary, args, stdin === undefined ? {} : { stdin });
  }

  /** `ipset version`. */
  async version(): Promise<IPSetVersion> {
    const args = ['version'];
    const r = await this.exec(args);
    const v = r.code === 0 ? parseIPSetVersion(r.stdout + r.stderr) : undefined;
    if (v === undefined) throw new IPSetError('version', args, r.code, r.stderr || r.stdout);
    return v;
  }

  /** The names of every set in the namespace (`ipset list -n`), ours or not. */
  async listNames(): Promise<string[]> {
    const args = ['list', '-n'];
    const r = await this.exec(args);
    if (r.code !== 0) throw new IPSetError('list', args, r.code, r.stderr);
    return r.stdout.split('\n').filter((l) => l.trim() !== '');
  }

  /**
   * The sets named in `names` (default: the catalogue's, both families) as the kernel holds them; a set that
   * does not exist is absent from the map. One `ipset save` for all (it takes at most one name); other sets'
   * lines are skipped unread.
   */
  async save(names: Iterable<string> = allKubeIPSetNames()): Promise<Map<string, SavedIPSet>> {
    const args = ['save'];
    const r = await this.exec(args);
    if (r.code !== 0) throw new IPSetError('save', args, r.code, r.stderr);
    const wanted = new Set(names);
    const parsed = parseIPSetSave(r.stdout, (name) => wanted.has(name));
    const problem = parsed.problems[0];
    if (problem !== undefined) {
      const stderr = `cannot read line ${problem.line} of the output (${problem.text}): ${problem.reason}`;
      throw new IPSetError('save', args, r.code, stderr);
    }
    return parsed.sets;
  }

  /**
   * `ipset restore -exist` with `text` on stdin: creating a set that exists with the same options, adding an entry
   * that is there and deleting one that is not are no errors. ipset applies lines as it goes, so a failure may
   * leave earlier lines applied: list again before the next diff.
   */
  async restore(text: string): Promise<void> {
    const args = ['restore', '-exist'];
    const r = await this.exec(args, text);
    if (r.code === 0) return;
    const m = /Error in line (\d+):/.exec(r.stderr);
    const line = m ? Number(m[1]) : undefined;
    const lineText = line === undefined ? undefined : text.split('\n')[line - 1];
    throw new IPSetError('restore', args, r.code, r.stderr, line, lineText);
  }

  /**
   * `ipset destroy NAME`: true if it was destroyed, false if there was no such set (cleanup need not care). A set
   * an iptables rule still matches cannot be destroyed ("in use by a kernel component"): an IPSetError.
   */
  async destroy(name: string): Promise<boolean> {
    const args = ['destroy', name];
    const r = await this.exec(args);
    if (r.code === 0) return true;
    if (/does not exist/.test(r.stderr)) return false;
    throw new IPSetError('destroy', args, r.code, r.stderr);
  }
}

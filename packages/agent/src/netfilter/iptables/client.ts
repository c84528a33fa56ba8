// Runs iptables, iptables-restore and iptables-save for one family through the CommandRunner seam, the way
// upstream's pkg/util/iptables does: wait flags first, then the operation (`-C CHAIN -t TABLE args…`), and
// `--noflush --counters` for restores.
//
// Lock wait measurement: legacy iptables serialises on an flock(2) of the xtables lock file. Before each legacy
// restore we take that lock ourselves with `flock -w <wait> <lockfile> true` (what iptables-restore would
// otherwise block on inside its own -w wait), time how long that took, release it at once, and then run the
// restore with the usual wait flags (which still cover the short race in between). If flock times out, the
// restore is not attempted: it would only wait the same time again and fail the same way. iptables-nft takes no
// lock, so nothing is measured there (wait 0).
import type { IPFamily } from '../../model/ip.js';
import type { Clock } from '../../util/clock.js';
import type { CommandResult, CommandRunner } from '../command.js';
import type { IptablesTableName } from './types.js';
import type { IptablesBackendKind, IptablesBinaries, IptablesVariant, IptablesVersion } from './variant.js';
import { commandWaitFlags, iptablesBinaries, parseIptablesVersion, restoreWaitFlags } from './variant.js';

export const DEFAULT_LOCK_FILE = '/run/xtables.lock';
export const DEFAULT_LOCK_WAIT_SECONDS = 5;

export type IptablesErrorKind = 'lock-timeout' | 'restore' | 'command' | 'not-found' | 'version';

/** A failed iptables operation, with what was run and what it said. */
export class IptablesError extends Error {
  constructor(
    readonly kind: IptablesErrorKind,
    readonly command: string,
    readonly args: readonly string[],
    readonly code: number,
    readonly stderr: string,
    /** For restores: the input line iptables-restore named as failing, when it did. */
    readonly failedLine?: number,
  ) {
    super(`${command} ${args.join(' ')}: ${kind} (exit ${code}): ${stderr.trim() || 'no output'}`);
    this.name = 'IptablesError';
  }
}

export interface IptablesClientOptions {
  readonly family: IPFamily;
  readonly commands: CommandRunner;
  readonly clock: Clock;
  readonly variant?: IptablesVariant;
  /**
   * The xtables lock file; passed to every command as XTABLES_LOCKFILE (tests use their own). Default: our own
   * $XTABLES_LOCKFILE, else /run/xtables.lock, as iptables itself decides, so that the wait we measure is on
   * the file the commands will lock.
   */
  readonly lockFile?: string;
  /** Seconds to wait for the xtables lock (upstream: 5). */
  readonly lockWaitSeconds?: number;
}

export interface RestoreOptions {
  /** Default true: only the chains named in the input are touched. */
  readonly noflush?: boolean;
  /** Default true: keep counters given in the input. */
  readonly counters?: boolean;
  /** Parse and check only (`--test`); nothing is committed. */
  readonly test?: boolean;
}

export interface RestoreOutcome {
  /** Time spent waiting for the xtables lock before the restore, ms (0 for iptables-nft). */
  readonly lockWaitMs: number;
  /** Time iptables-restore itself ran, ms. */
  readonly restoreMs: number;
}

export class IptablesClient {
  readonly family: IPFamily;
  readonly variant: IptablesVariant;
  readonly binaries: IptablesBinaries;
  readonly lockFile: string;
  readonly lockWaitSeconds: number;
  private readonly commands: CommandRunner;
  private readonly clock: Clock;
  private readonly env: Readonly<Record<string, string>> | undefined;
  private versionPromise: Promise<IptablesVersion> | undefined;

  constructor(options: IptablesClientOptions) {
    this.family = options.family;
    this.variant = options.variant ?? 'auto';
    this.binaries = iptablesBinaries(options.family, this.variant);
    this.commands = options.commands;
    this.clock = options.clock;
    this.lockFile = options.lockFile ?? (process.env.XTABLES_LOCKFILE || DEFAULT_LOCK_FILE);
    this.lockWaitSeconds = options.lockWaitSeconds ?? DEFAULT_LOCK_WAIT_SECONDS;
    this.env = options.lockFile === undefined ? undefined : { XTABLES_LOCKFILE: options.lockFile };
  }

  /** `iptables --version`, asked once. */
  version(): Promise<IptablesVersion> {
    this.versionPromise ??= this.readVersion();
    return this.versionPromise;
  }

  private async readVersion(): Promise<IptablesVersion> {
    const args = ['--version'];
    const r = await this.exec(this.binaries.iptables, args);
    const v = r.code === 0 ? parseIptablesVersion(r.stdout + r.stderr) : undefined;
    if (!v) {
      this.versionPromise = undefined; // try again next time
      throw new IptablesError('version', this.binaries.iptables, args, r.code, r.stderr || r.stdout);
    }
    return v;
  }

  /** Which back end the selected binaries use. */
  async backend(): Promise<IptablesBackendKind> {
    return (await this.version()).backend;
  }

  private exec(cmd: string, args: readonly string[], stdin?: string): Promise<CommandResult> {
    const opts: { stdin?: string; env?: Readonly<Record<string, string>> } = {};
    if (stdin !== undefined) opts.stdin = stdin;
    if (this.env) opts.env = this.env;
    return this.commands.run(cmd, args, opts);
  }

  /** Runs `iptables <wait> <op> CHAIN -t TABLE args…` and returns the raw result (exit codes carry meaning). */
  async run(
    op: string,
    table: IptablesTableName,
    chain: string | undefined,
    args: readonly string[] = [],
  ): Promise<{ readonly result: CommandResult; readonly argv: readonly string[] }> {
    const v = await this.version();
    const argv = [
      ...commandWaitFlags(v, this.lockWaitSeconds),
      op,
      ...(chain === undefined ? [] : [chain]),
      '-t',
      table,
      ...args,
    ];
    return { result: await this.exec(this.binaries.iptables, argv), argv };
  }

  /** Creates the chain if missing (`-N`); resolves true if it already existed. */
  async ensureChain(table: IptablesTableName, chain: string): Promise<boolean> {
    const { result, argv } = await this.run('-N', table, chain);
    if (result.code === 0) return false;
    // Upstream: exit status 1 from -N means "Chain already exists".
    if (result.code === 1) return true;
    throw new IptablesError('command', this.binaries.iptables, argv, result.code, result.stderr);
  }

  async chainExists(table: IptablesTableName, chain: string): Promise<boolean> {
    const { result } = await this.run('-S', table, chain);
    return result.code === 0;
  }

  /** `-C`: whether the rule exists. Exit 1 means "no such rule" (or no such chain/target); others are errors. */
  async ruleExists(table: IptablesTableName, chain: string, args: readonly string[]): Promise<boolean> {
    const { result, argv } = await this.run('-C', table, chain, args);
    if (result.code === 0) return true;
    if (result.code === 1) return false;
    throw new IptablesError('command', this.binaries.iptables, argv, result.code, result.stderr);
  }

  /** `-C`, then `-I` (prepend) or `-A` if missing; resolves true if it already existed. */
  async ensureRule(
    position: 'prepend' | 'append',
    table: IptablesTableName,
    chain: string,
    args: readonly string[],
  ): Promise<boolean> {
    if (await this.ruleExists(table, chain, args)) return true;
    const { result, argv } = await this.run(position === 'prepend' ? '-I' : '-A', table, chain, args);
    if (result.code !== 0) {
      throw new IptablesError('command', this.binaries.iptables, argv, result.code, result.stderr);
    }
    return false;
  }

  /** Deletes the rule if present (`-C` then `-D`); resolves whether something was deleted. */
  async deleteRule(table: IptablesTableName, chain: string, args: readonly string[]): Promise<boolean> {
    if (!(await this.ruleExists(table, chain, args))) return false;
    const { result, argv } = await this.run('-D', table, chain, args);
    if (result.code !== 0) {
      throw new IptablesError('command', this.binaries.iptables, argv, result.code, result.stderr);
    }
    return true;
  }

  /** `iptables-save -t TABLE`, or every table without one. */
  async save(table?: IptablesTableName): Promise<string> {
    const args = table === undefined ? [] : ['-t', table];
    const r = await this.exec(this.binaries.save, args);
    if (r.code !== 0) throw new IptablesError('command', this.binaries.save, args, r.code, r.stderr);
    return r.stdout;
  }

  /**
   * Waits for the xtables lock (legacy only) and measures the wait; rejects with kind 'lock-timeout' when it is
   * still held after lockWaitSeconds.
   */
  async waitForLock(): Promise<number> {
    if ((await this.backend()) !== 'legacy') return 0;
    const args = ['-w', String(this.lockWaitSeconds), this.lockFile, 'true'];
    const start = this.clock.now();
    const r = await this.commands.run('flock', args);
    const waited = this.clock.now() - start;
    if (r.code === 1) throw new IptablesError('lock-timeout', 'flock', args, r.code, r.stderr);
    // flock missing or failing for another reason: the restore's own -w wait still applies; report no wait.
    return r.code === 0 ? waited : 0;
  }

  /** `iptables-restore <wait> --noflush --counters` with `input` on stdin. */
  async restore(input: string, options: RestoreOptions = {}): Promise<RestoreOutcome> {
    const v = await this.version();
    const lockWaitMs = options.test ? 0 : await this.waitForLock();
    const args = [...restoreWaitFlags(v, this.lockWaitSeconds)];
    if (options.noflush ?? true) args.push('--noflush');
    if (options.counters ?? true) args.push('--counters');
    if (options.test) args.push('--test');
    const start = this.clock.now();
    const r = await this.exec(this.binaries.restore, args, input);
    const restoreMs = this.clock.now() - start;
    if (r.code !== 0) {
      const m = /line (\d+) failed/.exec(r.stderr);
      throw new IptablesError(
        /xtables lock/i.test(r.stderr) ? 'lock-timeout' : 'restore',
        this.binaries.restore,
        args,
        r.code,
        r.stderr,
        m ? Number(m[1]) : undefined,
      );
    }
    return { lockWaitMs, restoreMs };
  }
}

/** Detects the back end of the host's plain `iptables` ("(nf_tables)" or "(legacy)"). */
export async function detectIptablesBackend(
  commands: CommandRunner,
  family: IPFamily = 'IPv4',
): Promise<IptablesBackendKind | undefined> {
  const bin = iptablesBinaries(family, 'auto').iptables;
  const r = await commands.run(bin, ['--version']);
  if (r.code !== 0) return undefined;
  return parseIptablesVersion(r.stdout + r.stderr)?.backend;
}

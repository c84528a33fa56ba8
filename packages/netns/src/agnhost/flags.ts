// agnhost's subcommands take their flags the way Go's pflag reads them: `--name=value` or `--name value`, booleans
// as `--tcp`, `--tcp=true` or `--http=false`, durations in Go's notation (`5s`, `1m30s`, `250ms`). Positional words
// are kept in order. klog's flags are accepted everywhere and ignored, as agnhost adds them to every subcommand.
import { parseGoDuration as readGoDuration } from 'kube-proxy-ts/config/duration.js';

export type FlagKind = 'int' | 'string' | 'bool' | 'duration';

export interface FlagSpec {
  readonly [name: string]: FlagKind;
}

export interface ParsedFlags {
  /** Ints and durations (milliseconds) as numbers, booleans as booleans, strings as given. */
  readonly values: ReadonlyMap<string, number | string | boolean>;
  readonly positional: readonly string[];
}

const KLOG_FLAGS = new Set([
  'v',
  'vmodule',
  'logtostderr',
  'alsologtostderr',
  'stderrthreshold',
  'log_dir',
  'log_file',
  'log_file_max_size',
  'skip_headers',
  'skip_log_headers',
  'add_dir_header',
  'one_output',
]);

/** A Go duration ("1m30s", "250ms", "0") in milliseconds, read by the agent's own parser; throws on anything else. */
export function parseGoDuration(text: string): number {
  const d = readGoDuration(text);
  if (!d.ok) throw new Error(`invalid duration ${JSON.stringify(text)}`);
  return d.ms;
}

/** Go's strconv.Atoi: an optional sign and decimal digits, nothing else. */
export function parseGoInt(text: string): number | undefined {
  return /^[+-]?\d+$/.test(text) ? Number(text) : undefined;
}

function convert(name: string, kind: FlagKind, raw: string): number | string | boolean {
  switch (kind) {
    case 'string':
      return raw;
    case 'int': {
      const n = parseGoInt(raw);
      if (n === undefined) throw new Error(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag`);
      return n;
    }
    case 'duration':
      return parseGoDuration(raw);
    case 'bool':
      if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw)) return true;
      if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw)) return false;
      throw new Error(`invalid argument ${JSON.stringify(raw)} for "--${name}" flag`);
  }
}

/** Reads `argv` against `spec`; throws a pflag-like message for an unknown flag or a bad value. */
export function parseFlags(argv: readonly string[], spec: FlagSpec): ParsedFlags {
  const values = new Map<string, number | string | boolean>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? '';
    if (word === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!word.startsWith('-') || word === '-') {
      positional.push(word);
      continue;
    }
    const body = word.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const kind = spec[name];
    if (kind === undefined) {
      if (!KLOG_FLAGS.has(name)) throw new Error(`unknown flag: --${name}`);
      // klog's value flags take the next word when written without '='.
      if (eq < 0 && name !== 'logtostderr' && name !== 'alsologtostderr' && !name.startsWith('skip')) i++;
      continue;
    }
    let raw: string;
    if (eq >= 0) raw = body.slice(eq + 1);
    else if (kind === 'bool') raw = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new Error(`flag needs an argument: --${name}`);
      raw = next;
      i++;
    }
    values.set(name, convert(name, kind, raw));
  }
  return { values, positional };
}

/** The value of flag `name`, or `fallback` when it was not given. */
export function flag(parsed: ParsedFlags, name: string, fallback: string): string;
export function flag(parsed: ParsedFlags, name: string, fallback: number): number;
export function flag(parsed: ParsedFlags, name: string, fallback: boolean): boolean;
export function flag(parsed: ParsedFlags, name: string, fallback: number | string | boolean): unknown {
  const v = parsed.values.get(name);
  return v === undefined ? fallback : v;
}

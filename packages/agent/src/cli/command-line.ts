// How every subcommand (the agent's and the lab's) reads its command line, so that all of them behave as one tool:
// flags parsed strictly by node:util's parseArgs; `-h`/`--help` prints the usage on stdout and exits 0; a flag the
// command does not take, a flag without its value, or a value the command refuses (UsageError) prints
// `NAME: what is wrong`, then the usage, on stderr, and exits with the command's usage status (2, as kubectl; the
// doctor's is 3, because its 1 and 2 are findings).
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';

/** A command line the command refuses; printed with the usage. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

/** What parseArgs gives for these options (and -h/--help), with its tokens (which flags were given). */
export type ParsedCommandLine<O extends Options> = ReturnType<
  typeof parseArgs<{
    args: string[];
    strict: true;
    allowPositionals: true;
    tokens: true;
    options: O & typeof HELP;
  }>
>;

/** The flag values of a command line (`FlagValues<typeof DIFF_LINE>`), for the function that acts on them. */
export type FlagValues<L extends { readonly options: Options }> = ParsedCommandLine<L['options']>['values'];

export interface CommandLine<O extends Options> {
  /** As the user typed it, before each message: `doctor`, `lab soak`. */
  readonly name: string;
  readonly usage: string;
  readonly options: O;
  /** Whether words that are not flags are taken (ParsedCommandLine.positionals); refused otherwise. */
  readonly positionals?: boolean;
  /** The exit status of a refused command line (default 2). */
  readonly usageExit?: number;
  /** The error `body` throws for a problem with its input (not the command line): `NAME: message`, exit 1. */
  readonly inputError?: abstract new (...args: never[]) => Error;
}

export interface CommandOutput {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

export const processOutput: CommandOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** The report format flag of the commands that print one (its values: choice-flag.ts REPORT_OUTPUTS). */
export const OUTPUT_OPTION = { output: { type: 'string', short: 'o' } } as const;

/** Whether `e` says the command line is wrong: a UsageError, or parseArgs' refusal (a TypeError with a code). */
function isUsageError(e: unknown): e is Error {
  return e instanceof UsageError || (e instanceof TypeError && 'code' in e);
}

/** The parsed command line, or undefined when help was asked for (and printed). Throws parseArgs' refusals. */
function read<O extends Options>(
  line: CommandLine<O>,
  argv: readonly string[],
  io: CommandOutput,
): ParsedCommandLine<O> | undefined {
  const parsed = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    tokens: true,
    options: { ...line.options, ...HELP },
  }) as ParsedCommandLine<O>;
  if ((parsed.values as { help?: boolean }).help) {
    io.stdout(line.usage);
    return undefined;
  }
  if (!line.positionals && parsed.positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[0])}`);
  return parsed;
}

function refuse(line: CommandLine<Options>, io: CommandOutput, e: unknown): number {
  if (line.inputError !== undefined && e instanceof line.inputError) {
    io.stderr(`${line.name}: ${e.message}\n`);
    return 1;
  }
  if (!isUsageError(e)) throw e;
  io.stderr(`${line.name}: ${e.message}\n\n${line.usage}`);
  return line.usageExit ?? 2;
}

/**
 * Reads the command line and runs `body` with it; help, refused command lines and the command's inputError end
 * here (see the header), any other error is `body`'s to throw.
 */
export async function runCommand<O extends Options>(
  line: CommandLine<O>,
  argv: readonly string[],
  io: CommandOutput,
  body: (parsed: ParsedCommandLine<O>) => Promise<number> | number,
): Promise<number> {
  try {
    const parsed = read(line, argv, io);
    return parsed === undefined ? 0 : await body(parsed);
  } catch (e) {
    return refuse(line, io, e);
  }
}

/** runCommand for a command that does its work synchronously. */
export function runCommandSync<O extends Options>(
  line: CommandLine<O>,
  argv: readonly string[],
  io: CommandOutput,
  body: (parsed: ParsedCommandLine<O>) => number,
): number {
  try {
    const parsed = read(line, argv, io);
    return parsed === undefined ? 0 : body(parsed);
  } catch (e) {
    return refuse(line, io, e);
  }
}

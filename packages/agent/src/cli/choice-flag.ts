// A command's flag that takes one of a closed set of names, read into its type once (config/choice.ts words the
// refusal as the agent does): `--proxy-mode: unknown mode "ipvsx" (iptables, nftables or ipvs)`.
import { readChoice } from '../config/choice.js';
import { UsageError } from './command-line.js';

/** `given` as one of `list` (`fallback` when the flag is absent); a UsageError naming the flag otherwise. */
export function choiceFlag<T extends string>(
  flag: string,
  noun: string,
  list: readonly T[],
  given: string | undefined,
  fallback: T,
): T {
  const read = readChoice(noun, list, given, fallback);
  if (!read.ok) throw new UsageError(`${flag}: ${read.message}`);
  return read.value;
}

/** choiceFlag for a flag without a default: undefined when it is absent. */
export function optionalChoiceFlag<T extends string>(
  flag: string,
  noun: string,
  list: readonly T[],
  given: string | undefined,
): T | undefined {
  return given === undefined ? undefined : choiceFlag(flag, noun, list, given, given as T);
}

/** The output formats of the commands that print a report (-o). */
export const REPORT_OUTPUTS = ['text', 'json'] as const;

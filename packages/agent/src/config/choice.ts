// Options that take one of a closed set of names (a mode, a layout, an executor). Each is read once, where its
// flag or field is parsed, into its union type: nothing downstream checks the name again or falls back to a
// default, and every command words a wrong name the same way.

/** `value` is one of `list`. */
export function isOneOf<T extends string>(list: readonly T[], value: string): value is T {
  return (list as readonly string[]).includes(value);
}

/** "a or b", "a, b or c". */
export function orList(list: readonly string[]): string {
  return list.length <= 1 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]}`;
}

/** `unknown layout "tall" (upstream or flat)`: what every command says of a name outside its set. */
export function unknownChoice(noun: string, given: string, list: readonly string[]): string {
  return `unknown ${noun} ${JSON.stringify(given)} (${orList(list)})`;
}

export type ChoiceRead<T extends string> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

/** `given` as one of `list`, else the message naming it and the choices (`given` undefined: `fallback`). */
export function readChoice<T extends string>(
  noun: string,
  list: readonly T[],
  given: string | undefined,
  fallback: T,
): ChoiceRead<T> {
  if (given === undefined) return { ok: true, value: fallback };
  return isOneOf(list, given)
    ? { ok: true, value: given }
    : { ok: false, message: unknownChoice(noun, given, list) };
}

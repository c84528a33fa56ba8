// Configuration problems are values: each names the field (a v1alpha1 path such as `nftables.minSyncPeriod`, or a
// flag such as `--proxy-mode`) and says what is wrong, so that every problem can be reported at once.

export interface ConfigProblem {
  /** v1alpha1 field path (`iptables.syncPeriod`, `nodePortAddresses[1]`), a flag (`--v`), or '' for the whole file. */
  readonly field: string;
  readonly message: string;
  /** The flag that set the field, when it came from the command line rather than a file. */
  readonly flag?: string;
}

export function problem(field: string, message: string): ConfigProblem {
  return { field, message };
}

/** `field: message`, or just the message when the problem concerns no single field. */
export function formatProblem(p: ConfigProblem): string {
  if (p.field === '') return p.message;
  return p.flag === undefined ? `${p.field}: ${p.message}` : `${p.field} (${p.flag}): ${p.message}`;
}

/** A short, quoted rendering of a value for messages: strings quoted, other JSON types named. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return `timestamp ${value.toISOString()}`;
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${String(value)}`;
}

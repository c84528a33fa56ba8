// iptables-restore input as data: tables → chains → rules, each rule's arguments an array of tokens. Only the
// serializer (serialize.ts) turns these into text, so quoting and line structure live in one place.

export const IPTABLES_TABLES = ['filter', 'nat', 'mangle', 'raw', 'security'] as const;
export type IptablesTableName = (typeof IPTABLES_TABLES)[number];

/** The built-in chains of each table; everything else is a user chain. */
export const BUILTIN_CHAINS: Readonly<Record<IptablesTableName, readonly string[]>> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
  security: ['INPUT', 'FORWARD', 'OUTPUT'],
};

export function isIptablesTable(s: string): s is IptablesTableName {
  return (IPTABLES_TABLES as readonly string[]).includes(s);
}

/** One `-A CHAIN args…` line. `args` are tokens exactly as iptables receives them in argv (no quoting). */
export interface IptablesRule {
  readonly chain: string;
  readonly args: readonly string[];
}

/** One `*table … COMMIT` block of a --noflush restore. */
export interface RestoreTable {
  readonly table: IptablesTableName;
  /** Written as `:CHAIN - [0:0]`: the chain is created if missing, else flushed. */
  readonly chains: readonly string[];
  /** Written as `-I CHAIN args…` (insert at the top), in order, after the chain lines and before `rules`. */
  readonly inserts?: readonly IptablesRule[];
  /** Appended in order, after all chain lines. */
  readonly rules: readonly IptablesRule[];
  /** `-X CHAIN` lines after the rules; each should also be in `chains` so that it is flushed first. */
  readonly deleteChains: readonly string[];
}

export interface RestoreInput {
  readonly tables: readonly RestoreTable[];
}

/** xt_comment holds at most 255 bytes (XT_MAX_COMMENT_LEN 256 with the NUL); longer ones are refused. */
export const COMMENT_MAX_BYTES = 255;

/** `-m comment --comment TEXT`, cut to what the kernel accepts (on a UTF-8 character boundary). */
export function commentMatch(text: string): string[] {
  return ['-m', 'comment', '--comment', truncateUtf8(text, COMMENT_MAX_BYTES)];
}

export function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const buf = Buffer.from(text, 'utf8');
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && ((buf[end] as number) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

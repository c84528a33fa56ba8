// Go's time.Duration text form, as KubeProxyConfiguration files and kube-proxy's flags use it: "15s", "1m30s",
// "500ms", "1h0m0s", "1.5h", "0". Parsing follows time.ParseDuration (fractions are truncated to whole
// nanoseconds; int64 overflow is an error); formatting follows Duration.String, so a written file reads back to
// the same value. Internally durations are milliseconds (what Clock and the runner take), possibly fractional.

const NANOS_PER_UNIT: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // micro sign
  ['\u03bcs', 1_000n], // Greek mu
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

const MAX_INT64 = (1n << 63n) - 1n;

export type DurationParse =
  { readonly ok: true; readonly ms: number } | { readonly ok: false; readonly error: string };

/** Parses Go duration text into milliseconds. */
export function parseGoDuration(text: string): DurationParse {
  const ns = parseNanos(text);
  return typeof ns === 'string' ? { ok: false, error: ns } : { ok: true, ms: Number(ns) / 1_000_000 };
}

/** A value the parser accepts, or a message saying why it does not. */
function parseNanos(orig: string): bigint | string {
  const invalid = `invalid duration ${JSON.stringify(orig)}`;
  let s = orig;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return invalid;
  let total = 0n;
  while (s !== '') {
    const m = /^(\d*)(?:\.(\d*))?/.exec(s);
    const whole = m?.[1] ?? '';
    const fraction = m?.[2];
    if (whole === '' && (fraction === undefined || fraction === '')) return invalid;
    s = s.slice(m?.[0].length ?? 0);
    const unitMatch = /^[^\d.]+/.exec(s);
    if (unitMatch === null) return `missing unit in duration ${JSON.stringify(orig)}`;
    const unitText = unitMatch[0];
    const unit = NANOS_PER_UNIT.get(unitText);
    if (unit === undefined) {
      return `unknown unit ${JSON.stringify(unitText)} in duration ${JSON.stringify(orig)}`;
    }
    s = s.slice(unitText.length);
    let value = (whole === '' ? 0n : BigInt(whole)) * unit;
    if (fraction !== undefined && fraction !== '') {
      value += (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length);
    }
    total += value;
    if (total > MAX_INT64 + (negative ? 1n : 0n)) return invalid;
  }
  return negative ? -total : total;
}

/** Formats milliseconds as Go's Duration.String does ("1h0m0s", "1m30s", "500ms", "0s"). */
export function formatGoDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1_000_000));
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  if (ns < 0n) ns = -ns;
  if (ns < 1_000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${withFraction(ns, 1_000n)}\u00b5s`;
  if (ns < 1_000_000_000n) return `${sign}${withFraction(ns, 1_000_000n)}ms`;
  const hours = ns / 3_600_000_000_000n;
  const minutes = (ns / 60_000_000_000n) % 60n;
  const seconds = withFraction(ns % 60_000_000_000n, 1_000_000_000n);
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}

/** `value / unit` as decimal text with trailing fractional zeros removed ("1.5", "30"). */
function withFraction(value: bigint, unit: bigint): string {
  const whole = value / unit;
  const rest = value % unit;
  if (rest === 0n) return whole.toString();
  const digits = unit.toString().length - 1;
  const fraction = rest.toString().padStart(digits, '0').replace(/0+$/, '');
  return `${whole}.${fraction}`;
}

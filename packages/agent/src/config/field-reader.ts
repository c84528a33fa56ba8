// Reads one mapping of a decoded YAML/JSON document with Go's encoding/json rules as the API machinery applies
// them: keys match case-sensitively, null means "not set", a value of the wrong JSON type is an error naming
// the field, and keys nobody asked for are unknown fields (a strict-decoding error upstream, which then falls
// back to a lenient decode that ignores them: the caller turns them into warnings).
import { parseGoDuration } from './duration.js';
import { describeValue, problem } from './problems.js';
import type { ConfigProblem } from './problems.js';

export interface DecodeSink {
  readonly problems: ConfigProblem[];
  readonly unknownFields: string[];
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const UINT32_MAX = 2 ** 32 - 1;

export function isMapping(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

export class FieldReader {
  private readonly consumed = new Set<string>();

  constructor(
    private readonly mapping: Readonly<Record<string, unknown>>,
    private readonly prefix: string,
    private readonly sink: DecodeSink,
  ) {}

  path(key: string): string {
    return this.prefix === '' ? key : `${this.prefix}.${key}`;
  }

  /** The raw value, or undefined when absent or null; marks the key as known. */
  private take(key: string): unknown {
    this.consumed.add(key);
    const value = this.mapping[key];
    return value === null ? undefined : value;
  }

  private fail(key: string, expected: string, value: unknown): undefined {
    this.sink.problems.push(problem(this.path(key), `must be ${expected}, got ${describeValue(value)}`));
    return undefined;
  }

  string(key: string): string | undefined {
    const v = this.take(key);
    if (v === undefined || typeof v === 'string') return v;
    return this.fail(key, 'a string', v);
  }

  boolean(key: string): boolean | undefined {
    const v = this.take(key);
    if (v === undefined || typeof v === 'boolean') return v;
    return this.fail(key, 'true or false', v);
  }

  int32(key: string): number | undefined {
    return this.integer(key, INT32_MIN, INT32_MAX, 'a 32-bit integer');
  }

  uint32(key: string): number | undefined {
    return this.integer(key, 0, UINT32_MAX, 'a non-negative 32-bit integer');
  }

  private integer(key: string, min: number, max: number, expected: string): number | undefined {
    const v = this.take(key);
    if (v === undefined) return undefined;
    if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return v;
    return this.fail(key, expected, v);
  }

  float(key: string): number | undefined {
    const v = this.take(key);
    if (v === undefined || (typeof v === 'number' && Number.isFinite(v))) return v;
    return this.fail(key, 'a number', v);
  }

  /** A Go duration string ("30s"), as milliseconds. */
  duration(key: string): number | undefined {
    const v = this.take(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') return this.fail(key, 'a duration string such as "30s"', v);
    const parsed = parseGoDuration(v);
    if (parsed.ok) return parsed.ms;
    this.sink.problems.push(problem(this.path(key), `${parsed.error} (use e.g. "30s", "1m30s", "500ms")`));
    return undefined;
  }

  /** component-base's TimeOrMetaDuration: a duration string, or an integer number of nanoseconds. */
  durationOrNanos(key: string): number | undefined {
    const v = this.mapping[key];
    if (typeof v === 'number' && Number.isInteger(v)) {
      this.consumed.add(key);
      return v / 1_000_000;
    }
    return this.duration(key);
  }

  stringList(key: string): readonly string[] | undefined {
    const v = this.take(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) return this.fail(key, 'a list of strings', v);
    const out: string[] = [];
    v.forEach((item: unknown, i) => {
      if (typeof item === 'string') out.push(item);
      else
        this.sink.problems.push(
          problem(`${this.path(key)}[${i}]`, `must be a string, got ${describeValue(item)}`),
        );
    });
    return out;
  }

  boolMap(key: string): Readonly<Record<string, boolean>> | undefined {
    const v = this.take(key);
    if (v === undefined) return undefined;
    if (!isMapping(v)) return this.fail(key, 'a mapping of names to true/false', v);
    const out: Record<string, boolean> = {};
    for (const [name, value] of Object.entries(v)) {
      if (typeof value === 'boolean') out[name] = value;
      else
        this.sink.problems.push(
          problem(`${this.path(key)}.${name}`, `must be true or false, got ${describeValue(value)}`),
        );
    }
    return out;
  }

  /** A nested mapping, read by `read`; its unknown keys are reported with their full path. */
  object<T>(key: string, read: (r: FieldReader) => T): T | undefined {
    const v = this.take(key);
    if (v === undefined) return undefined;
    if (!isMapping(v)) return this.fail(key, 'a mapping', v);
    const reader = new FieldReader(v, this.path(key), this.sink);
    const value = read(reader);
    reader.finish();
    return value;
  }

  /** A list of mappings, each read by `read`; items that are not mappings are reported and skipped. */
  objectList<T>(key: string, read: (r: FieldReader) => T): readonly T[] | undefined {
    const v = this.take(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) return this.fail(key, 'a list', v);
    const out: T[] = [];
    v.forEach((item: unknown, i) => {
      const path = `${this.path(key)}[${i}]`;
      if (!isMapping(item)) {
        this.sink.problems.push(problem(path, `must be a mapping, got ${describeValue(item)}`));
        return;
      }
      const reader = new FieldReader(item, path, this.sink);
      out.push(read(reader));
      reader.finish();
    });
    return out;
  }

  /** Accepts any value without looking at it (fields we do not use, such as alpha logging options). */
  ignore(key: string): void {
    this.consumed.add(key);
  }

  /** Reports the keys that no reader asked for. */
  finish(): void {
    for (const key of Object.keys(this.mapping)) {
      if (!this.consumed.has(key)) this.sink.unknownFields.push(this.path(key));
    }
  }
}

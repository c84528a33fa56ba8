// The process's logger: klog-like text by default, one JSON object per line with --logging-format=json, records
// at -v levels above the configured verbosity dropped before they are built.
import type { LogFields, Logger } from '../util/logger.js';

export type LogFormat = 'text' | 'json';

export interface ProcessLoggerOptions {
  readonly format: LogFormat;
  readonly verbosity: number;
  readonly write?: (line: string) => void;
  readonly now?: () => Date;
}

function two(n: number): string {
  return String(n).padStart(2, '0');
}

/** klog's header: Lmmdd hh:mm:ss.uuuuuu */
function klogHeader(level: 'I' | 'W' | 'E', d: Date): string {
  const micros = String(d.getMilliseconds() * 1000).padStart(6, '0');
  return `${level}${two(d.getMonth() + 1)}${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${micros}`;
}

function textValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'object' && v !== null) {
    try {
      return JSON.stringify(v);
    } catch {
      return '"[unprintable]"';
    }
  }
  return String(v);
}

export function processLogger(options: ProcessLoggerOptions): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  const emit = (level: 'I' | 'W' | 'E', v: number, msg: string, fields: LogFields): void => {
    const d = now();
    if (options.format === 'json') {
      const record: Record<string, unknown> = { ts: d.getTime() / 1000, v, msg, ...fields };
      if (level === 'E') record.err = fields.error;
      if (level !== 'I') record.level = level === 'E' ? 'error' : 'warning';
      write(`${JSON.stringify(record)}\n`);
      return;
    }
    const kv = Object.entries(fields)
      .map(([k, val]) => ` ${k}=${textValue(val)}`)
      .join('');
    write(`${klogHeader(level, d)} ${String(process.pid).padStart(7)}] ${JSON.stringify(msg)}${kv}\n`);
  };
  const make = (ctx: LogFields): Logger => ({
    info: (msg, fields = {}) => emit('I', 0, msg, { ...ctx, ...fields }),
    warn: (msg, fields = {}) => emit('W', 0, msg, { ...ctx, ...fields }),
    error: (msg, fields = {}) => emit('E', 0, msg, { ...ctx, ...fields }),
    v: (level, build) => {
      if (level > options.verbosity) return;
      const { msg, fields = {} } = build();
      emit('I', level, msg, { ...ctx, ...fields });
    },
    child: (fields) => make({ ...ctx, ...fields }),
  });
  return make({});
}

/**
 * The lab commands' logger (lab up, lab apiserver): one JSON object per line on stderr ({level, msg, ...fields}),
 * no -v records. Not processLogger: the lab has no --logging-format or -v flags to configure one.
 */
export function stderrLogger(fields: LogFields = {}): Logger {
  const line = (level: string, msg: string, f: LogFields = {}): void =>
    void process.stderr.write(`${JSON.stringify({ level, msg, ...fields, ...f })}\n`);
  return {
    info: (m, f) => line('info', m, f),
    warn: (m, f) => line('warn', m, f),
    error: (m, f) => line('error', m, f),
    v: () => undefined,
    child: (f) => stderrLogger({ ...fields, ...f }),
  };
}

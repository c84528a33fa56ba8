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

/** klog's header: `Lmmdd hh:mm:ss.uuuuuu threadid file:line]`, the process ID standing in for the thread's. */
function klogHeader(level: 'I' | 'W' | 'E', d: Date, caller: string): string {
  const micros = String(d.getMilliseconds() * 1000).padStart(6, '0');
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${micros}`;
  return `${level}${two(d.getMonth() + 1)}${two(d.getDate())} ${time} ${String(process.pid).padStart(7)} ${caller}]`;
}

type LogMethod = (...args: never[]) => void;

/**
 * `file:line` of the code that called `method` (the logger's own function), as klog prints the Go caller's:
 * `proxier.js:140]` (the compiled file; under tsx the source's). klog's `???:1` when the stack says nothing.
 */
function callerLocation(method: LogMethod): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  const holder: { stack?: string } = {};
  Error.captureStackTrace(holder, method);
  Error.stackTraceLimit = limit;
  const frame = holder.stack?.split('\n')[1] ?? '';
  const m = /([^/\\\s(]+):(\d+):\d+\)?$/.exec(frame);
  return m ? `${m[1]}:${m[2]}` : '???:1';
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
  const emit = (
    level: 'I' | 'W' | 'E',
    v: number,
    msg: string,
    fields: LogFields,
    method: LogMethod,
  ): void => {
    const d = now();
    const caller = callerLocation(method);
    if (options.format === 'json') {
      const record: Record<string, unknown> = { ts: d.getTime() / 1000, caller, v, msg, ...fields };
      if (level === 'E') record.err = fields.error;
      if (level !== 'I') record.level = level === 'E' ? 'error' : 'warning';
      write(`${JSON.stringify(record)}\n`);
      return;
    }
    const kv = Object.entries(fields)
      .map(([k, val]) => ` ${k}=${textValue(val)}`)
      .join('');
    write(`${klogHeader(level, d, caller)} ${JSON.stringify(msg)}${kv}\n`);
  };
  // Each method hands itself to emit, so the caller found is the frame just outside the logger.
  const make = (ctx: LogFields): Logger => {
    const info: Logger['info'] = (msg, fields = {}) => emit('I', 0, msg, { ...ctx, ...fields }, info);
    const warn: Logger['warn'] = (msg, fields = {}) => emit('W', 0, msg, { ...ctx, ...fields }, warn);
    const error: Logger['error'] = (msg, fields = {}) => emit('E', 0, msg, { ...ctx, ...fields }, error);
    const v: Logger['v'] = (level, build) => {
      if (level > options.verbosity) return;
      const { msg, fields = {} } = build();
      emit('I', level, msg, { ...ctx, ...fields }, v);
    };
    return { info, warn, error, v, child: (fields) => make({ ...ctx, ...fields }) };
  };
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

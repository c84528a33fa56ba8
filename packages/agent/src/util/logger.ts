// The logger every component receives (never a global). Upstream's klog levels: v(0) always, v(2) changes,
// v(4) per-sync detail. Fields are structured; the text or JSON format is chosen by the CLI (--logging-format).

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  /** Logs at verbosity `level` only when -v is at least that; `build` is called only then (lazy). */
  v(level: number, build: () => { msg: string; fields?: LogFields }): void;
  child(fields: LogFields): Logger;
}

const silent: Logger = {
  info: () => {},
  error: () => {},
  warn: () => {},
  v: () => {},
  child: () => silent,
};

/** A logger that drops everything (unit tests, benchmarks). */
export const SILENT_LOGGER: Logger = silent;

export interface LogRecord {
  readonly level: 'info' | 'warn' | 'error';
  readonly v: number;
  readonly msg: string;
  readonly fields: LogFields;
}

/** A logger that keeps every record (at every verbosity), for tests that assert on what was logged. */
export function recordingLogger(
  records: LogRecord[] = [],
  base: LogFields = {},
): Logger & { records: LogRecord[] } {
  const make = (ctx: LogFields): Logger & { records: LogRecord[] } => ({
    records,
    info: (msg, fields = {}) =>
      void records.push({ level: 'info', v: 0, msg, fields: { ...ctx, ...fields } }),
    warn: (msg, fields = {}) =>
      void records.push({ level: 'warn', v: 0, msg, fields: { ...ctx, ...fields } }),
    error: (msg, fields = {}) =>
      void records.push({ level: 'error', v: 0, msg, fields: { ...ctx, ...fields } }),
    v: (level, build) => {
      const { msg, fields = {} } = build();
      records.push({ level: 'info', v: level, msg, fields: { ...ctx, ...fields } });
    },
    child: (fields) => make({ ...ctx, ...fields }),
  });
  return make(base);
}

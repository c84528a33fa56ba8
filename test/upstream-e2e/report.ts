// The run's report: a line per upstream test (passed, failed with its message, not ported with the reason) and a
// summary, as text or JSON.
import { KNOWN_LAB_GAPS } from './registry.js';
import type { TestResult } from './runner.js';

export interface Report {
  readonly mode: string;
  readonly results: readonly TestResult[];
  readonly summary: {
    readonly passed: number;
    readonly failed: number;
    readonly notPorted: number;
    /** Ported tests the cluster could not run (a requirement unmet): neither passed nor failed. */
    readonly skipped: number;
  };
}

export function makeReport(mode: string, results: readonly TestResult[]): Report {
  const count = (o: TestResult['outcome']): number => results.filter((r) => r.outcome === o).length;
  return {
    mode,
    results,
    summary: {
      passed: count('passed'),
      failed: count('failed'),
      notPorted: count('not-ported'),
      skipped: count('skipped'),
    },
  };
}

/** Exit 0 only when every test that ran passed (and something ran). */
export function reportPassed(r: Report): boolean {
  return r.summary.failed === 0 && r.summary.passed > 0;
}

const LABEL = {
  passed: 'PASS      ',
  failed: 'FAIL      ',
  'not-ported': 'NOT PORTED',
  skipped: 'SKIPPED   ',
} as const;

export function formatText(r: Report): string {
  const lines = [`upstream e2e on the lab, mode ${r.mode}:`];
  for (const t of r.results) {
    const time = t.seconds === undefined ? '' : ` (${t.seconds} s)`;
    lines.push(`${LABEL[t.outcome]} ${t.name}${time}`);
    if (t.outcome === 'not-ported' || t.outcome === 'skipped') lines.push(`           ${t.message ?? ''}`);
    if (t.outcome === 'failed') {
      const gap = KNOWN_LAB_GAPS[t.name];
      if (gap !== undefined) lines.push(`           known lab gap: ${gap}`);
      lines.push(`           ${t.message ?? ''}`);
      for (const l of t.log ?? []) lines.push(`           | ${l}`);
    }
  }
  const s = r.summary;
  lines.push(`${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped, ${s.notPorted} not ported`);
  return lines.join('\n');
}

export function formatJson(r: Report): string {
  const results = r.results.map((t) =>
    t.outcome === 'failed' && KNOWN_LAB_GAPS[t.name] !== undefined
      ? { ...t, knownLabGap: KNOWN_LAB_GAPS[t.name] }
      : t,
  );
  return JSON.stringify({ ...r, results }, null, 2);
}

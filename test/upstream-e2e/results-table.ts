// `npm run --silent e2e:upstream:table -- REPORT.json…`: the docs' results table from the JSON reports of full
// runs (one per mode, later reports of a mode merged over earlier ones, `npm run --silent e2e:upstream -- --mode MODE -o json > MODE.json`): one row per upstream
// test, grouped by upstream file, with its outcome in each mode, then the counts per mode. Prints Markdown.
import { readFileSync } from 'node:fs';

interface ResultRow {
  readonly name: string;
  readonly file: string;
  readonly conformance: boolean;
  readonly outcome: string;
  readonly apiOnly?: boolean;
  readonly seconds?: number;
  readonly message?: string;
  readonly knownLabGap?: string;
}

interface ReportFile {
  readonly mode: string;
  readonly results: readonly ResultRow[];
}

/** Tests of this project's own (the UDP conntrack cases), reported beside upstream's and counted apart. */
const OWN_FILE = 'kube-proxy-ts';

/** A cell: PASS, FAIL (why, shortened), SKIPPED (why); not-ported tests get one reason column instead. */
function cell(r: ResultRow | undefined): string {
  if (r === undefined) return '—';
  const why = (r.knownLabGap ?? r.message ?? '').split('\n')[0]?.replace(/\|/g, '\\|').slice(0, 120) ?? '';
  switch (r.outcome) {
    case 'passed':
      return 'PASS';
    case 'failed':
      return `FAIL: ${why}`;
    case 'skipped':
      return `skipped: ${why}`;
    default:
      return r.outcome;
  }
}

export function resultsTable(reports: readonly ReportFile[]): string {
  const names = new Map<string, ResultRow>();
  for (const rep of reports) for (const r of rep.results) if (!names.has(r.name)) names.set(r.name, r);
  const byMode = reports.map((rep) => new Map(rep.results.map((r) => [r.name, r])));
  const rows = [...names.values()];
  const files = [...new Set(rows.map((r) => r.file))];
  const out: string[] = [];
  for (const file of files) {
    const inFile = rows.filter((r) => r.file === file);
    const ported = inFile.filter((r) => byMode.some((m) => m.get(r.name)?.outcome !== 'not-ported'));
    const notPorted = inFile.filter((r) => !ported.includes(r));
    out.push(`### ${file}`, '');
    if (ported.length > 0) {
      out.push(`| upstream test | ${reports.map((r) => r.mode).join(' | ')} |`);
      out.push(`|---|${reports.map(() => '---').join('|')}|`);
      for (const r of ported) {
        const tag = r.apiOnly === true ? ' (API only)' : '';
        out.push(`| ${r.name}${tag} | ${byMode.map((m) => cell(m.get(r.name))).join(' | ')} |`);
      }
      out.push('');
    }
    if (notPorted.length > 0) {
      out.push('Not ported:', '', '| upstream test | why not |', '|---|---|');
      for (const r of notPorted) out.push(`| ${r.name} | ${(r.message ?? '').replace(/\|/g, '\\|')} |`);
      out.push('');
    }
  }
  out.push(
    '### Counts',
    '',
    '| mode | upstream, proxy-dependent: passed | upstream, API only: passed | failed | skipped | not ported | kube-proxy-ts own tests: passed |',
  );
  out.push('|---|---|---|---|---|---|---|');
  for (const rep of reports) {
    const count = (f: (r: ResultRow) => boolean): number => rep.results.filter(f).length;
    const upstream = (r: ResultRow): boolean => r.file !== OWN_FILE;
    const cells = [
      count((r) => upstream(r) && r.outcome === 'passed' && r.apiOnly !== true),
      count((r) => upstream(r) && r.outcome === 'passed' && r.apiOnly === true),
      count((r) => r.outcome === 'failed'),
      count((r) => r.outcome === 'skipped'),
      count((r) => r.outcome === 'not-ported'),
      count((r) => !upstream(r) && r.outcome === 'passed'),
    ];
    out.push(`| ${rep.mode} | ${cells.join(' | ')} |`);
  }
  return out.join('\n');
}

/**
 * One report per mode: a later report of a mode (a run of a few tests with --only, say after a fix) replaces the
 * earlier results of the tests it ran, and the order of the first report is kept.
 */
export function mergeByMode(reports: readonly ReportFile[]): ReportFile[] {
  const byMode = new Map<string, Map<string, ResultRow>>();
  for (const rep of reports) {
    const rows = byMode.get(rep.mode) ?? new Map<string, ResultRow>();
    for (const r of rep.results) {
      const earlier = rows.get(r.name);
      // A not-ported line in a narrow run (--only) says nothing new about a test the wider run ran.
      if (earlier !== undefined && r.outcome === 'not-ported' && earlier.outcome !== 'not-ported') continue;
      rows.set(r.name, r);
    }
    byMode.set(rep.mode, rows);
  }
  return [...byMode].map(([mode, rows]) => ({ mode, results: [...rows.values()] }));
}

function main(paths: readonly string[]): void {
  if (paths.length === 0) {
    process.stderr.write('usage: npm run --silent e2e:upstream:table -- REPORT.json…\n');
    process.exit(2);
  }
  const reports = paths.map((p) => JSON.parse(readFileSync(p, 'utf8')) as ReportFile);
  process.stdout.write(`${resultsTable(mergeByMode(reports))}\n`);
}

if (process.argv[1]?.endsWith('results-table.ts')) main(process.argv.slice(2));

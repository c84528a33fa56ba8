// The page's files: ours (packages/lab/src/web/assets/, plain JavaScript modules and CSS, served as written: no bundler, no build
// step) and uPlot's (its own dist files, from node_modules). All read once at start; the page loads nothing from
// anywhere else, so it works with no network.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface WebAsset {
  readonly type: string;
  readonly body: Buffer;
}

/** packages/lab/src/web/assets, from the source tree (tests) or from dist/web/ (`npm start`). */
export function assetsDir(): string {
  for (const rel of ['./assets', '../../src/web/assets']) {
    const p = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(p, 'index.html'))) return p;
  }
  throw new Error('packages/lab/src/web/assets is missing: the web view serves its page from there');
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};

function typeOf(name: string): string {
  return TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream';
}

/** The page's own files: its modules (app.js imports the others) and its style. */
export const PAGE_FILES = [
  'app.js',
  'state.js',
  'dom.js',
  'cluster.js',
  'charts.js',
  'ruleset.js',
  'actions.js',
  'style.css',
] as const;

export function loadAssets(): { indexHtml: string; assets: Map<string, WebAsset> } {
  const dir = assetsDir();
  const uplot = dirname(createRequire(import.meta.url).resolve('uplot'));
  const files: [string, string][] = [
    ...PAGE_FILES.map((f): [string, string] => [`/assets/${f}`, join(dir, f)]),
    ['/assets/uPlot.iife.min.js', join(uplot, 'uPlot.iife.min.js')],
    ['/assets/uPlot.min.css', join(uplot, 'uPlot.min.css')],
  ];
  const assets = new Map<string, WebAsset>();
  for (const [path, file] of files) assets.set(path, { type: typeOf(file), body: readFileSync(file) });
  return { indexHtml: readFileSync(join(dir, 'index.html'), 'utf8'), assets };
}

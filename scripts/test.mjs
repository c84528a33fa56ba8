#!/usr/bin/env node
// The project's one test command (`npm test`): type-check, lint, format check, then every *.test.ts under test/
// on Node's built-in runner, with tsx loading TypeScript. Arguments narrow the run to files whose path contains one
// of them (`npm test -- model/ topology`). KPTS_SKIP_CHECKS=1 skips the static checks for a quick local loop.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...findTests(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

function run(step, cmd, args) {
  console.log(`\n== ${step}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`\n== ${step} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

if (process.env.KPTS_SKIP_CHECKS !== '1') {
  run('typecheck', 'npx', ['--no-install', 'tsc', '-p', 'tsconfig.json', '--noEmit']);
  run('lint', 'npx', ['--no-install', 'eslint', '.']);
  run('format', 'npx', ['--no-install', 'prettier', '--check', '--log-level', 'warn', '.']);
}

const files = findTests(join(root, 'test'))
  .map((f) => relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
console.log(`\n== tests: ${files.length} files`);
run('tests', process.execPath, [
  '--import',
  'tsx',
  // Workspace imports (kube-proxy-ts/…, @kube-proxy-ts/…) resolve to each package's src/, not its dist/.
  '--conditions=kpts-source',
  '--test',
  '--test-reporter=spec',
  // No single test may hang the run (CI has 90 minutes in all); the slowest (the lab's e2e steps) take ~2 minutes.
  `--test-timeout=${process.env.KPTS_TEST_TIMEOUT_MS ?? '600000'}`,
  `--test-concurrency=${process.env.KPTS_TEST_CONCURRENCY ?? '2'}`,
  ...files,
]);

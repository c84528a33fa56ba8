// The agent as an operator installs it from a package: `npm pack` of packages/agent, installed globally into an
// empty prefix, with nothing of this repository on PATH. The tarball holds the compiled agent and nothing of the
// lab, the netns kit, the tests or the sources; the installed tree holds the agent's production dependencies and no
// development tool; its `kube-proxy-ts` answers --version and renders a node's rules.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { SYSTEM_PATH } from '../helpers/cli.js';

const execFileP = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const LIMITS = { cwd: REPO, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 };
/** What a new shell has, plus the directory of this Node.js (the bin's `#!/usr/bin/env node` needs one ≥ 20). */
const CLEAN_PATH = `${dirname(process.execPath)}:${SYSTEM_PATH}`;

/** The agent package's own production dependencies, read from its package.json. */
const AGENT_DEPENDENCIES = Object.keys(
  (
    JSON.parse(readFileSync(join(REPO, 'packages/agent/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    }
  ).dependencies,
);

/** Every package directory under a node_modules tree (scoped ones as @scope/name). */
function installedPackages(nodeModules: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(nodeModules)) {
    if (name.startsWith('.')) continue;
    if (name.startsWith('@')) {
      for (const sub of readdirSync(join(nodeModules, name))) out.push(`${name}/${sub}`);
    } else out.push(name);
  }
  for (const name of [...out]) {
    const nested = join(nodeModules, name, 'node_modules');
    if (existsSync(nested)) out.push(...installedPackages(nested));
  }
  return out;
}

describe('the agent package: npm pack, npm install -g, run (issue 23)', { timeout: 600_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'kpts-pack-'));
  const prefix = join(work, 'global');
  let tarball = '';
  let files: string[] = [];

  before(async () => {
    // prepack builds the package (tsc -b), so the tarball is of this checkout's sources.
    const packed = await execFileP(
      'npm',
      ['pack', '--workspace', 'packages/agent', '--pack-destination', work, '--json', '--loglevel=error'],
      LIMITS,
    );
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    assert.ok(info, packed.stdout);
    tarball = join(work, info.filename);
    files = info.files.map((f) => f.path);
    // Its dependencies come from the npm cache that setup's `npm ci` filled (the registry when they are not there).
    await execFileP(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        tarball,
      ],
      { ...LIMITS, env: { ...process.env, PATH: CLEAN_PATH } },
    );
  });

  after(() => rmSync(work, { recursive: true, force: true }));

  test('the tarball holds the compiled agent only: no lab, netns kit, tests or sources', () => {
    assert.ok(files.includes('package.json'));
    assert.ok(files.includes('dist/cli/main.js'), 'the bin is in the tarball');
    assert.ok(files.includes('dist/sync/proxier.js'));
    const stray = files.filter((f) => f !== 'package.json' && f !== 'README.md' && !/^dist\/.*\.js$/.test(f));
    assert.deepEqual(stray, [], 'only package.json, README.md and dist/**/*.js');
    const labLike = files.filter((f) =>
      /(^|\/)(lab|apiserver|controllers|soak|web|netns|pod-server)(\/|\.|-)/.test(f),
    );
    assert.deepEqual(labLike, [], 'nothing of the lab or the netns kit');
  });

  test('the installed tree: the agent and its production dependencies, no development tool and no lab', () => {
    const root = join(prefix, 'lib', 'node_modules');
    assert.deepEqual(readdirSync(root), ['kube-proxy-ts']);
    const installed = installedPackages(join(root, 'kube-proxy-ts', 'node_modules'));
    for (const dep of AGENT_DEPENDENCIES) assert.ok(installed.includes(dep), `${dep} is installed`);
    for (const never of ['uplot', 'typescript', 'tsx', 'eslint', 'prettier', 'playwright-core'])
      assert.ok(!installed.includes(never), `${never} is not installed`);
    assert.deepEqual(
      installed.filter((p) => p.startsWith('@kube-proxy-ts/')),
      [],
      'no package of the lab or the netns kit',
    );
  });

  test('kube-proxy-ts --version and render work from the global bin, outside the repository', async () => {
    const bin = join(prefix, 'bin', 'kube-proxy-ts');
    const env = { PATH: CLEAN_PATH, HOME: work };
    const opts = { cwd: work, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 };
    const version = await execFileP(bin, ['--version'], opts);
    assert.match(version.stdout, /^kube-proxy-ts v\d+\.\d+\.\d+\nnft: /);
    const example = join(REPO, 'examples', 'cluster.yaml');
    const rendered = await execFileP(bin, ['render', '-f', example, '--cluster-cidr', '198.18.8.0/21'], opts);
    assert.match(rendered.stdout, /^add table ip kube-proxy/m);
    assert.match(rendered.stdout, /service-\w{8}-svc\/web\/tcp\/http/);
    // No lab on this PATH (setup puts the repository's kube-proxy-ts-lab in /usr/local/bin).
    const agentOnly = { ...opts, env: { ...env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin` } };
    const lab = await execFileP(bin, ['lab', 'status'], agentOnly).then(
      () => undefined,
      (e: { code?: number; stderr?: string }) => e,
    );
    assert.equal(lab?.code, 1, 'the agent alone has no lab');
    assert.match(lab?.stderr ?? '', /kube-proxy-ts-lab is not on PATH/);
  });
});

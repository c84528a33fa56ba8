// `kube-proxy-ts render` as a user pipes it: the whole output reaches a slow reader and `nft -c -f -`, and a
// reader that stops early (`| head -1`) ends it quietly. The CLI runs as a child process, as the bin would, on a
// dump of 10,000 Services × 10 endpoints (the benchmark's workload, written as `kubectl get -o json` prints it).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { renderCommand } from '../../packages/agent/src/cli/render.js';
import { workloadRenderArgs, WORKLOAD_NODE, writeWorkloadDump } from '../../bench/render.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The CLI as a child process: node with tsx, as the other CLI tests start it. */
const CLI = [process.execPath, ...SOURCE_FLAGS, AGENT_MAIN];
const SERVICES = 10_000;
const LIMITS = { cwd: REPO, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 };

/** Runs a POSIX shell script with the CLI's argv as "$@". */
function sh(script: string, argv: readonly string[], env: NodeJS.ProcessEnv = {}) {
  return run('sh', ['-c', script, 'sh', ...argv], { ...LIMITS, env: { ...process.env, ...env } });
}

function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** Progress lines are allowed on stderr for a slow read; anything else there is a failure. */
function unexpectedStderr(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l !== '')
    .filter(
      (l) =>
        !/^render: (reading .* objects…|read .* objects in [\d.]+ s|.*building the model…|rendering \w+…)$/.test(
          l,
        ),
    );
}

describe(`render of ${SERVICES.toLocaleString('en-US')} Services through a pipe`, () => {
  let dir = '';
  let dump = '';
  let argv: string[] = [];
  /** What render writes, computed in this process without any pipe. */
  let expected = '';

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kpts-render-pipe-'));
    dump = join(dir, 'dump.json');
    writeWorkloadDump(dump, SERVICES, 10, 'json');
    argv = [...CLI, ...workloadRenderArgs(dump)];
    const code = renderCommand(workloadRenderArgs(dump).slice(1), {
      stdout: (t) => void (expected += t),
      stderr: () => undefined,
      readFile: (p) => readFileSync(p, 'utf8'),
      hostname: () => WORKLOAD_NODE.name,
    });
    assert.equal(code, 0);
    // Every Service has its ClusterIP element, the last one included: the expectation itself is whole.
    assert.match(
      expected,
      /^add element ip kube-proxy service-ips \{ (?:.*, )?198\.18\.167\.15 \. tcp \. 80 : goto \S+(?:, .*)? \}$/m,
    );
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  test('written to a file, it is every line', async () => {
    const out = join(dir, 'render.out');
    const { stderr } = await sh('"$@" > "$OUT"', argv, { OUT: out });
    assert.deepEqual(unexpectedStderr(stderr), []);
    const written = readFileSync(out, 'utf8');
    assert.equal(lineCount(written), lineCount(expected));
    assert.ok(written === expected, 'the file holds exactly what render computes');
  });

  test('a reader that starts late gets every line', async () => {
    // The reader sleeps while render finishes and would exit: the output must wait for it in the pipe.
    const { stdout } = await sh('"$@" | { sleep 2; wc -l; }', argv);
    assert.equal(Number(stdout.trim()), lineCount(expected));
  });

  test('a reader that takes a little at a time gets every byte', async () => {
    const child = spawn(argv[0] ?? '', argv.slice(1), { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.stdout.on('data', (b: Buffer) => {
      chunks.push(b);
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 2); // a slow reader, the condition under test: not a wait
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 0, stderr);
    const got = Buffer.concat(chunks).toString('utf8');
    assert.equal(lineCount(got), lineCount(expected));
    assert.ok(got === expected, 'the piped text is exactly what render computes');
  });

  test('| head -1 ends it quietly', async () => {
    const status = join(dir, 'status');
    const err = join(dir, 'stderr');
    const { stdout } = await sh('{ "$@" 2>"$ERR"; echo $? >"$STATUS"; } | head -1', argv, {
      ERR: err,
      STATUS: status,
    });
    assert.equal(stdout, expected.slice(0, expected.indexOf('\n') + 1));
    // As a tool killed by SIGPIPE: 128 + 13, and nothing said about it.
    assert.equal(readFileSync(status, 'utf8').trim(), '141');
    assert.deepEqual(unexpectedStderr(readFileSync(err, 'utf8')), []);
  });

  test(
    '| nft -c -f - accepts all of it, inside a namespace the test makes',
    kernelOptions(['ip', 'nft']),
    async () => {
      const ns = `${runPrefix()}-render-pipe`;
      const teed = join(dir, 'teed');
      await run('ip', ['netns', 'add', ns]);
      try {
        // tee keeps what went down the pipe, so a cut at a line boundary (which nft might accept) cannot pass.
        const { stderr } = await sh('"$@" | tee "$TEED" | ip netns exec "$NS" nft -c -f -', argv, {
          NS: ns,
          TEED: teed,
        });
        assert.deepEqual(unexpectedStderr(stderr), []);
        assert.ok(readFileSync(teed, 'utf8') === expected, 'nft was given every line');
      } finally {
        await run('ip', ['netns', 'del', ns]);
      }
    },
  );
});

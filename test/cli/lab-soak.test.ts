// `lab soak`'s command line: bad flags are a usage error (exit 2) that names the flag, before any lab is looked
// for; no lab is exit 1 with the reason.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAB_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';

function soak(...args: string[]): { code: number | null; stderr: string; stdout: string } {
  const r = spawnSync(process.execPath, [...SOURCE_FLAGS, LAB_MAIN, 'soak', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('lab soak command line', () => {
  test('bad flags: exit 2, the flag named', () => {
    const cases: [string[], RegExp][] = [
      [['--duration', '1s'], /--duration: 1 s is outside 5 s/],
      [['--duration', 'soon'], /--duration: invalid duration "soon"/],
      [['--services', '1'], /--services: 1 is outside 2/],
      [['--rate', 'abc'], /--rate "abc": not a number/],
      [['--churn', '1000'], /--churn: 1000 is outside 0 … 100/],
      [['--restart-proxy-every', '1s'], /--restart-proxy-every: at least 5 s/],
      [['-o', 'yaml'], /-o: unknown output format "yaml" \(text or json\)/],
      [['--bogus'], /Unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const r = soak(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    }
  });

  test('--help: the flags and the exit codes, exit 0', () => {
    const r = soak('--help');
    assert.equal(r.code, 0);
    assert.match(r.stdout, /--competing-lock-holder/);
    assert.match(r.stdout, /Exit status: 0 every guarantee held/);
  });

  test('no lab: exit 1 with the reason', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kpts-soak-cli-'));
    try {
      const r = soak('--state-dir', dir);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /no lab is up/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// `kube-proxy-ts lab web`: the URL from the running lab's state file; a clear message and exit 1 otherwise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labWebCommand } from '../../packages/lab/src/cli/lab-web.js';
import { labPaths } from '../../packages/lab/src/cluster/layout.js';
import { writeLabState, type LabState } from '../../packages/lab/src/cluster/state.js';

function run(argv: string[], stateDir: string): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = labWebCommand(argv, stateDir, { stdout: (t) => (out += t), stderr: (t) => (err += t) });
  return { code, out, err };
}

const state: LabState = {
  version: 1,
  pid: process.pid,
  prefix: 'kptstest',
  nodes: ['control-plane'],
  mode: 'nftables',
  startedAt: 'now',
  apiserverURL: 'https://127.0.0.1:1',
  token: 't',
  caPem: '',
};

test('lab web prints the running lab’s URL, from the default or the given state directory', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'kpts-labweb-')), 'state');
  writeLabState(labPaths(dir).stateFile, { ...state, webURL: 'http://127.0.0.1:4321/?token=abc' });
  assert.deepEqual(run([], dir), { code: 0, out: 'http://127.0.0.1:4321/?token=abc\n', err: '' });
  assert.equal(run(['--state-dir', dir], '/nonexistent').out, 'http://127.0.0.1:4321/?token=abc\n');
});

test('lab web without a lab, with a dead lab, or with a lab that serves no page: exit 1 and why', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'kpts-labweb-')), 'state');
  const none = run([], dir);
  assert.equal(none.code, 1);
  assert.match(none.err, /no lab is up/);
  writeLabState(labPaths(dir).stateFile, state);
  const noWeb = run([], dir);
  assert.equal(noWeb.code, 1);
  assert.match(noWeb.err, /serves no web view/);
  writeLabState(labPaths(dir).stateFile, { ...state, pid: 0, webURL: 'http://127.0.0.1:1/' });
  const dead = run([], dir);
  assert.equal(dead.code, 1);
  assert.match(dead.err, /not running/);
  assert.equal(run(['--bogus'], dir).code, 2);
});

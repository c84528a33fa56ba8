// `kube-proxy-ts diff -f BEFORE -f AFTER`: the headers and sections of its text, its JSON, one mode alone, and the
// clear errors around it. The seed experiment (one endpoint added to one Service among 1,000) runs the CLI as a
// child process, as a user would; its counts are derived in test/inspect/diff.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { diffCommand } from '../../packages/agent/src/cli/diff.js';
import { renderCommand } from '../../packages/agent/src/cli/render.js';
import { nftOperationLines } from '../backends/nftables/helpers.js';
import { CLUSTER_CIDR, SERVICE_CIDR, workload, workloadList } from '../helpers/one-endpoint-workload.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';
import { recordingFileIO } from '../helpers/command-io.js';

const execFileAsync = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The CLI as a child process: node with tsx, as the other CLI tests start it. */
const CLI = [process.execPath, ...SOURCE_FLAGS, AGENT_MAIN];

const EXAMPLE = readFileSync(new URL('../../examples/cluster.yaml', import.meta.url), 'utf8');
// svc/web gains a fourth endpoint, on worker (the example's only Node, so the node diff describes).
const EXAMPLE_GROWN = EXAMPLE.replace(
  '  - addresses: [198.18.11.3]\n    nodeName: worker\n',
  '  - addresses: [198.18.11.3]\n    nodeName: worker\n  - addresses: [198.18.11.4]\n    nodeName: worker\n',
);

async function run(argv: string[], files: Record<string, string> = {}) {
  const { io, printed } = recordingFileIO(files, 'host-name');
  const code = await diffCommand(argv, io);
  return { code, ...printed };
}

/** Runs the CLI as a child; resolves with its exit code and output, also when it fails. */
async function runCLI(argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...args] = [...CLI, ...argv];
  try {
    const { stdout, stderr } = await execFileAsync(cmd ?? '', args, {
      cwd: REPO,
      timeout: 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof err.code === 'number' ? err.code : -1,
      stdout: err.stdout ?? '',
      stderr: err.stderr ?? '',
    };
  }
}

/**
 * The whole ruleset's size as `render` prints it for the same file and flags: its operations (nftables), or its
 * lines less the comment block of jump commands that iptables mode appends (which the restore input does not hold).
 */
function renderedSize(mode: 'nftables' | 'iptables', argv: string[], files: Record<string, string>): string {
  const { io, printed } = recordingFileIO(files, 'host-name');
  const code = renderCommand(['--proxy-mode', mode, ...argv], io);
  assert.equal(code, 0, printed.stderr);
  // nftables: its operations (render writes a set's elements as one statement; diff counts each).
  const size =
    mode === 'nftables'
      ? nftOperationLines(printed.stdout).length
      : printed.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
  return size.toLocaleString('en-US');
}

const HEADER = /^(nftables|iptables|ipvs): /;

function headers(text: string): string[] {
  return text.split('\n').filter((l) => HEADER.test(l));
}

/** Lines of the section after `header`, up to the blank line before the next one (or the end). */
function sectionLines(text: string, header: string): string[] {
  const all = text.split('\n');
  const from = all.indexOf(header) + 1;
  assert.ok(from > 0, `no ${header} in:\n${text}`);
  const rest = all.slice(from);
  const end = rest.findIndex(
    (l, i) => l === '' && (rest[i + 1] === undefined || HEADER.test(rest[i + 1] ?? '')),
  );
  return end < 0 ? rest : rest.slice(0, end);
}

describe('diff of one endpoint added among 1,000 Services, as a child process', () => {
  let dir = '';
  let args: string[] = [];

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kpts-diff-'));
    writeFileSync(join(dir, 'before.json'), workloadList(workload(1000)));
    writeFileSync(join(dir, 'after.json'), workloadList(workload(1000, 500)));
    // The node is the files' only Node (node-a, its InternalIP); both modes, text output: the defaults.
    args = [
      'diff',
      '-f',
      join(dir, 'before.json'),
      '-f',
      join(dir, 'after.json'),
      '--cluster-cidr',
      CLUSTER_CIDR,
      '--service-cidrs',
      SERVICE_CIDR,
    ];
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  test('text: what changed, then each backend with its size beside the whole ruleset', async () => {
    const r = await runCLI(args);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.equal(r.stdout.split('\n')[0], 'changes: 1 EndpointSlice updated');
    // nftables: svc500's chain (add, flush, rule) and the new endpoint's hairpin element; iptables: the fixed
    // top-level lines, 1,000 KUBE-SERVICES rules and svc500's chains (test/inspect/diff.test.ts derives both).
    const nft = 'nftables: 4 operations (whole ruleset: 6,080)';
    const ipt = 'iptables: 1,037 lines (whole ruleset: 11,027)';
    assert.deepEqual(headers(r.stdout), [nft, ipt]);
    assert.equal(sectionLines(r.stdout, nft).length, 4);
    assert.match(sectionLines(r.stdout, nft)[3] ?? '', /^add element ip kube-proxy hairpin-connections /);
    const restore = sectionLines(r.stdout, ipt);
    assert.equal(restore.length, 1_037);
    assert.deepEqual([restore[0], restore.at(-1)], ['*filter', 'COMMIT']);
  });

  test('-o json: nftables.operations and iptables.lines beside their totals, and the texts', async () => {
    const r = await runCLI([...args, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      node: string;
      nftables: { operations: number; total: number; text: string; synced: boolean; full: boolean };
      iptables: { lines: number; total: number; text: string; synced: boolean; full: boolean };
    };
    assert.equal(out.node, 'node-a');
    const { text: nftText, ...nft } = out.nftables;
    const { text: iptText, ...ipt } = out.iptables;
    assert.deepEqual(nft, { operations: 4, total: 6_080, synced: true, full: false });
    assert.deepEqual(ipt, { lines: 1_037, total: 11_027, synced: true, full: false });
    assert.equal(nftText.split('\n').length - 1, 4);
    assert.equal(iptText.split('\n').length - 1, 1_037);
  });

  test('a file that does not parse: a message naming it, exit 1, no stack trace', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"kind": "Service", ');
    const r = await runCLI(['diff', '-f', join(dir, 'before.json'), '-f', bad]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.deepEqual(r.stderr.split('\n'), [
      `diff: ${bad}: invalid JSON: Expected double-quoted property name in JSON at position 20`,
      `diff: ${bad} could not be read whole; nothing compared`,
      '',
    ]);
  });
});

describe('diff in-process', () => {
  const FILES = { 'before.yaml': EXAMPLE, 'after.yaml': EXAMPLE_GROWN };
  const BASE = ['-f', 'before.yaml', '-f', 'after.yaml', '--cluster-cidr', '198.18.8.0/21'];

  test('--proxy-mode nftables alone: one section, and JSON without iptables', async () => {
    const text = await run([...BASE, '--proxy-mode', 'nftables'], FILES);
    assert.equal(text.code, 0, text.stderr);
    // web's chain (add, flush, the numgen rule over four endpoints) and the hairpin element of 198.18.11.4, which
    // is on this node (worker).
    const header = `nftables: 4 operations (whole ruleset: ${renderedSize('nftables', ['-f', 'after.yaml', ...BASE.slice(4)], FILES)})`;
    assert.deepEqual(headers(text.stdout), [header]);
    assert.deepEqual(
      sectionLines(text.stdout, header).map((l) => l.split(' ').slice(0, 4).join(' ')),
      [
        'add chain ip kube-proxy',
        'flush chain ip kube-proxy',
        'add rule ip kube-proxy',
        'add element ip kube-proxy',
      ],
    );
    const json = await run([...BASE, '--proxy-mode', 'nftables', '-o', 'json'], FILES);
    assert.equal(json.code, 0, json.stderr);
    const out = JSON.parse(json.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(out).sort(), ['changes', 'nftables', 'node']);
    assert.equal(out.node, 'worker');
  });

  test('--proxy-mode ipvs: an endpoint added is a real server and a hairpin set entry; removed, drained first', async () => {
    const grown = await run([...BASE, '--proxy-mode', 'ipvs'], FILES);
    assert.equal(grown.code, 0, grown.stderr);
    // The whole ruleset: every line of render's sections but their comments (link add, addresses, set creates
    // and entries, virtual and real servers) less what is not a kernel operation the backend counts.
    const header = grown.stdout.split('\n').find((l) => l.startsWith('ipvs: ')) ?? '';
    assert.match(header, /^ipvs: 2 operations \(whole ruleset: \d+\)$/);
    // 198.18.11.4 is on this node (worker): its hairpin entry; web's ClusterIP gets the real server.
    assert.deepEqual(sectionLines(grown.stdout, header), [
      '# ipsets (ipset restore)',
      'add KUBE-LOOP-BACK 198.18.11.4,tcp:8080,198.18.11.4',
      '# IPVS virtual and real servers (ipvsadm)',
      '-a -t 198.19.0.10:80 -r 198.18.11.4:8080 -m -w 1',
    ]);
    // Back again: the TCP real server's weight goes to 0 before it is deleted (graceful termination; the
    // in-memory IPVS has no connections to wait for, so the delete follows in the same sync).
    const shrunk = await run(
      ['-f', 'after.yaml', '-f', 'before.yaml', ...BASE.slice(4), '--proxy-mode', 'ipvs'],
      FILES,
    );
    assert.equal(shrunk.code, 0, shrunk.stderr);
    assert.match(shrunk.stdout.split('\n')[2] ?? '', /^ipvs: 3 operations \(whole ruleset: \d+\)$/);
    assert.deepEqual(shrunk.stdout.split('\n').slice(3), [
      '# ipsets (ipset restore)',
      'del KUBE-LOOP-BACK 198.18.11.4,tcp:8080,198.18.11.4',
      '# IPVS virtual and real servers (ipvsadm)',
      '-e -t 198.19.0.10:80 -r 198.18.11.4:8080 -m -w 0',
      '-d -t 198.19.0.10:80 -r 198.18.11.4:8080',
      '',
    ]);
    const json = await run([...BASE, '--proxy-mode', 'ipvs', '-o', 'json'], FILES);
    const out = JSON.parse(json.stdout) as { ipvs: { operations: number; synced: boolean; full: boolean } };
    assert.deepEqual([out.ipvs.operations, out.ipvs.synced, out.ipvs.full], [2, true, false]);
  });

  test('no change that reaches the proxy: zero in both, and why', async () => {
    const r = await run(['-f', 'before.yaml', '-f', 'same.yaml'], {
      'before.yaml': EXAMPLE,
      'same.yaml': EXAMPLE,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'changes: none');
    const same = ['-f', 'same.yaml'];
    const files = { 'same.yaml': EXAMPLE };
    assert.deepEqual(headers(r.stdout), [
      `nftables: 0 operations (whole ruleset: ${renderedSize('nftables', same, files)})`,
      `iptables: 0 lines (whole ruleset: ${renderedSize('iptables', same, files)})`,
    ]);
    assert.equal(
      r.stdout.match(/^# nothing that reaches this node's proxy changed: it would not sync$/gm)?.length,
      2,
    );
  });

  test('usage errors: exit 2 and the problem named', async () => {
    const missing = await run(['-f', 'before.yaml'], FILES);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^diff: -f BEFORE -f AFTER: two files are required, got 1\n/);
    const none = await run([], FILES);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^diff: -f BEFORE -f AFTER: two files are required, got none\n/);
    const mode = await run([...BASE, '--proxy-mode', 'userspace'], FILES);
    assert.equal(mode.code, 2);
    assert.match(
      mode.stderr,
      /^diff: --proxy-mode: unknown mode "userspace" \(iptables, nftables, ipvs or both\)\n/,
    );
    const output = await run([...BASE, '-o', 'yaml'], FILES);
    assert.equal(output.code, 2);
    assert.match(output.stderr, /^diff: -o: unknown output format "yaml" \(text or json\)\n/);
    const flag = await run([...BASE, '--no-such-flag'], FILES);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /^diff: Unknown option '--no-such-flag'/);
    for (const r of [missing, none, mode, output, flag]) assert.equal(r.stdout, '');
  });

  test('bad input: exit 1 and the file named', async () => {
    const unreadable = await run(['-f', 'before.yaml', '-f', 'nope.yaml'], FILES);
    assert.equal(unreadable.code, 1);
    assert.match(unreadable.stderr, /^diff: cannot read nope\.yaml: ENOENT/);
    const broken = await run(['-f', 'before.yaml', '-f', 'broken.yaml'], {
      ...FILES,
      'broken.yaml': 'kind: Service\nmetadata: {name: x\n',
    });
    assert.equal(broken.code, 1);
    assert.match(
      broken.stderr,
      /^diff: broken\.yaml: Flow map .* \(line 3, column 1\)\ndiff: broken\.yaml could not be read whole; nothing compared\n$/,
    );
    assert.equal(broken.stdout, '');
  });

  test('--help', async () => {
    const r = await run(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage: kube-proxy-ts diff -f BEFORE -f AFTER \[flags\]\n/);
    assert.match(
      r.stdout,
      /--proxy-mode MODE +nftables, iptables, ipvs, or both \(default: nftables and iptables\)/,
    );
  });
});

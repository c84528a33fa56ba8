// `render --proxy-mode iptables` ends with the jump rules the node would ensure (apart from the restore input, as
// upstream does), as a comment block, or with --jumps-script as a script; both are the same commands.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { renderCommand } from '../../packages/agent/src/cli/render.js';
import { JUMP_RULES, KUBELET_JUMP_RULES } from '../../packages/agent/src/backends/iptables/jumps.js';
import { recordingFileIO } from '../helpers/command-io.js';

const EXAMPLE = readFileSync(new URL('../../examples/cluster.yaml', import.meta.url), 'utf8');
const V6 = `
apiVersion: v1
kind: Service
metadata: {name: s, namespace: n}
spec: {clusterIP: "2001:db8:ff::10", ipFamilies: [IPv6], ports: [{port: 80}]}
`;

function render(argv: string[]) {
  const { io, printed } = recordingFileIO({ 'cluster.yaml': EXAMPLE, 'v6.yaml': V6 }, 'worker');
  const code = renderCommand(argv, io);
  return { code, ...printed };
}

const BASE = ['-f', 'cluster.yaml', '--proxy-mode', 'iptables', '--cluster-cidr', '198.18.8.0/21'];

/** The commands of the comment block that follows the restore input. */
function commentedCommands(stdout: string): string[] {
  const commit = stdout.lastIndexOf('COMMIT\n');
  assert.ok(commit > 0, 'the restore input ends with COMMIT');
  const tail = stdout.slice(commit + 'COMMIT\n'.length).split('\n');
  assert.ok(
    tail.every((l) => l === '' || l.startsWith('#')),
    'after the last COMMIT there are only comments',
  );
  return tail.filter((l) => l.startsWith('#   ')).map((l) => l.slice(4));
}

/** "<table> <from> -j <to>" of every `-C … || -I …` command. */
function jumps(commands: readonly string[]): string[] {
  return commands
    .filter((c) => / -C /.test(c))
    .map((c) => {
      const m = /^ip6?tables -t (\w+) -C (\S+) .*-j (\S+) \|\| ip6?tables -t \1 -I \2 .*-j \3$/.exec(c);
      assert.ok(m, `a check-then-insert command: ${c}`);
      return `${m[1]} ${m[2]} -j ${m[3]}`;
    });
}

describe('render --proxy-mode iptables: the jump rules', () => {
  test('follow the restore input as comments, one check-then-insert per jump, chains made first', () => {
    const r = render(BASE);
    assert.equal(r.code, 0, r.stderr);
    const commands = commentedCommands(r.stdout);
    // IPv4 with localhost NodePorts (the default): kubelet's KUBE-FIREWALL jumps too, as the agent would.
    const rules = [...JUMP_RULES, ...KUBELET_JUMP_RULES];
    assert.deepEqual(
      jumps(commands),
      rules.map((j) => `${j.table} ${j.from} -j ${j.to}`),
    );
    for (const from of ['PREROUTING', 'OUTPUT', 'POSTROUTING', 'INPUT', 'FORWARD']) {
      assert.ok(
        commands.some((c) => c.includes(` -C ${from} `)),
        `a jump from ${from}`,
      );
    }
    // Each target chain is made (if missing) before the first jump into it.
    for (const j of rules) {
      const make = commands.indexOf(`iptables -t ${j.table} -N ${j.to} 2>/dev/null || true`);
      const first = commands.findIndex((c) => c.includes(`-t ${j.table} -C `) && c.endsWith(`-j ${j.to}`));
      assert.ok(make >= 0 && make < first, `${j.table} ${j.to} is made before it is jumped to`);
    }
    assert.ok(
      commands.includes(
        "iptables -t nat -C PREROUTING -m comment --comment 'kubernetes service portals' -j KUBE-SERVICES || " +
          "iptables -t nat -I PREROUTING -m comment --comment 'kubernetes service portals' -j KUBE-SERVICES",
      ),
      commands.join('\n'),
    );
    assert.match(r.stdout, /moves no packets/);
  });

  test('--jumps-script prints the same commands as an executable script, and nothing else', () => {
    const commented = commentedCommands(render(BASE).stdout);
    const script = render([...BASE, '--jumps-script']);
    assert.equal(script.code, 0, script.stderr);
    const lines = script.stdout.split('\n').filter((l) => l !== '');
    assert.equal(lines[0], '#!/bin/sh');
    const body = lines.slice(lines.indexOf('set -e') + 1);
    assert.deepEqual(body, commented);
    assert.doesNotMatch(script.stdout, /^\*(filter|nat)$/m);
  });

  test('without localhost NodePorts, and in IPv6, there are no KUBE-FIREWALL jumps; IPv6 uses ip6tables', () => {
    const noLocal = commentedCommands(render([...BASE, '--iptables-localhost-nodeports=false']).stdout);
    assert.deepEqual(
      jumps(noLocal),
      JUMP_RULES.map((j) => `${j.table} ${j.from} -j ${j.to}`),
    );
    const v6 = render(['-f', 'v6.yaml', '--proxy-mode', 'iptables', '--node-ip', '2001:db8::2']);
    assert.equal(v6.code, 0, v6.stderr);
    const commands = commentedCommands(v6.stdout);
    assert.ok(commands.length > 0 && commands.every((c) => c.startsWith('ip6tables ')), commands.join('\n'));
    assert.deepEqual(
      jumps(commands),
      JUMP_RULES.map((j) => `${j.table} ${j.from} -j ${j.to}`),
    );
    assert.match(v6.stdout, /'ip6tables-restore --noflush'/);
  });

  test('--jumps-script is for iptables mode only', () => {
    const r = render(['-f', 'cluster.yaml', '--jumps-script']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--jumps-script: only with --proxy-mode iptables/);
  });
});

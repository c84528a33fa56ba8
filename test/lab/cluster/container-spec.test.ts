// From a container spec to the argv the lab's kubelet runs: $(VAR) expansion as the kubelet does it, volume paths
// rewritten to host directories, kube-proxy-ts mapped to this checkout's CLI; and the pieces of the streaming
// protocol (WebSocket frames, the exit Status) and the container runtime's exit codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  expandVars,
  isAgnhostImage,
  resolveContainer,
  rewritePaths,
} from '../../../packages/lab/src/cluster/container-spec.js';
import { exitCodeOf } from '../../../packages/lab/src/cluster/containers.js';
import { namespaceArgv, shellQuote } from '../../../packages/lab/src/cluster/streams.js';
import { exitStatus } from '../../../packages/lab/src/apiserver/remotecommand.js';
import { tailLines } from '../../../packages/lab/src/apiserver/pod-log.js';
import { acceptKey, decodeFrame, encodeFrame } from '../../../packages/lab/src/apiserver/websocket.js';

test('$(VAR) expands defined variables, $$ escapes, unknown ones stay as written', () => {
  const env = { NODE_NAME: 'worker', A: 'x' };
  assert.equal(expandVars('--hostname-override=$(NODE_NAME)', env), '--hostname-override=worker');
  assert.equal(expandVars('$$(NODE_NAME) $(MISSING) $(A)$(A)', env), '$(NODE_NAME) $(MISSING) xx');
});

test('paths under a mountPath are rewritten, bare and as --flag=path; others are left alone', () => {
  const vols = [
    { mountPath: '/var/lib/kube-proxy', hostPath: '/state/pods/p/volumes/kube-proxy' },
    { mountPath: '/var/lib', hostPath: '/elsewhere' },
  ];
  assert.equal(
    rewritePaths('--config=/var/lib/kube-proxy/config.conf', vols),
    '--config=/state/pods/p/volumes/kube-proxy/config.conf',
  );
  assert.equal(rewritePaths('/var/lib/x', vols), '/elsewhere/x');
  assert.equal(rewritePaths('/var/library', vols), '/var/library');
  assert.equal(rewritePaths('--v=2', vols), '--v=2');
});

test('deploy/’s kube-proxy container becomes this checkout’s CLI with the node name and the volume path', () => {
  const pod = {
    metadata: { name: 'kube-proxy-abcde', namespace: 'kube-system' },
    spec: { nodeName: 'worker' },
  };
  const container = {
    name: 'kube-proxy',
    image: 'kube-proxy-ts:v0.1.0',
    command: [
      '/usr/local/bin/kube-proxy-ts',
      '--config=/var/lib/kube-proxy/config.conf',
      '--hostname-override=$(NODE_NAME)',
    ],
    env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
  };
  const r = resolveContainer(pod, container, [{ mountPath: '/var/lib/kube-proxy', hostPath: '/v' }]);
  assert.ok(r.argv);
  assert.equal(r.argv[0], process.execPath);
  assert.ok(r.argv.some((a) => /src\/cli\/main\.(ts|js)$/.test(a)));
  assert.deepEqual(r.argv.slice(-2), ['--config=/v/config.conf', '--hostname-override=worker']);
  assert.equal(r.env.NODE_NAME, 'worker');
});

test('a container without a command runs the pod server; kubectl run’s args run as given', () => {
  const pod = { metadata: { name: 'c' }, spec: {} };
  assert.equal(resolveContainer(pod, { name: 'web', image: 'x' }, []).argv, undefined);
  assert.equal(resolveContainer(pod, { name: 'web', image: 'lab/agnhost' }, []).argv, undefined);
  const run = resolveContainer(
    pod,
    { name: 'c', args: ['sh', '-c', 'echo $(HOME)'], stdin: true, tty: true },
    [],
  );
  assert.deepEqual(run.argv, ['sh', '-c', 'echo $(HOME)']);
  assert.equal(run.stdin, true);
  assert.equal(run.tty, true);
});

test('agnhost images with a subcommand run the lab’s agnhost, with the Pod’s hostname; other words run as given', () => {
  const pod = { metadata: { name: 'netexec-0' }, spec: { nodeName: 'worker' } };
  const agnhostMain = (argv: readonly string[] | undefined): number =>
    (argv ?? []).findIndex((a) => /netns\/(src|dist)\/agnhost\/main\.(ts|js)$/.test(a));
  for (const image of ['registry.k8s.io/e2e-test-images/agnhost:2.53', 'lab/agnhost', 'agnhost']) {
    const r = resolveContainer(
      pod,
      { name: 'n', image, args: ['netexec', '--http-port=8080', '--udp-port=8081'] },
      [],
    );
    const at = agnhostMain(r.argv);
    assert.ok(at > 0, `${image}: ${JSON.stringify(r.argv)}`);
    assert.equal(r.argv?.[0], process.execPath);
    assert.deepEqual(r.argv?.slice(at + 1), ['netexec', '--http-port=8080', '--udp-port=8081']);
    assert.equal(r.env.HOSTNAME, 'netexec-0');
  }
  const viaEntryPoint = resolveContainer(
    { metadata: { name: 'p' }, spec: { hostname: 'custom' } },
    { name: 'n', image: 'lab/agnhost', command: ['/agnhost', 'serve-hostname'], args: ['--port=9376'] },
    [],
  );
  assert.deepEqual(viaEntryPoint.argv?.slice(agnhostMain(viaEntryPoint.argv) + 1), [
    'serve-hostname',
    '--port=9376',
  ]);
  assert.equal(viaEntryPoint.env.HOSTNAME, 'custom');
  // Not an agnhost image: the words are a command like any other.
  assert.deepEqual(resolveContainer(pod, { name: 'n', image: 'busybox', args: ['netexec'] }, []).argv, [
    'netexec',
  ]);
  assert.equal(isAgnhostImage('registry.k8s.io/e2e-test-images/agnhost@sha256:abc'), true);
  assert.equal(isAgnhostImage('example.com/agnhost-fork:1'), false);
  assert.equal(isAgnhostImage('localhost:5000/agnhost'), true);
});

test('exit codes as the kubelet reports them: a signal is 128 + its number', () => {
  assert.equal(exitCodeOf({ code: 3, stdout: '', stderr: '' }), 3);
  assert.equal(exitCodeOf({ code: 128, stdout: '', stderr: 'x: killed by SIGTERM' }), 143);
  assert.equal(exitCodeOf({ code: 128, stdout: '', stderr: 'x: killed by SIGKILL' }), 137);
});

test('commands run through ip netns exec; a TTY runs them under script, sized first', () => {
  assert.deepEqual(namespaceArgv('kptslab-svc-c', ['curl', '-s', 'http://web.svc/'], undefined), [
    'ip',
    'netns',
    'exec',
    'kptslab-svc-c',
    'curl',
    '-s',
    'http://web.svc/',
  ]);
  const tty = namespaceArgv('kptslab-svc-c', ['sh', '-c', "echo 'a b'"], { width: 100, height: 30 });
  assert.deepEqual(tty.slice(4, 6), ['script', '-qfec']);
  assert.equal(tty[6], `stty rows 30 cols 100 2>/dev/null; exec sh -c ${shellQuote("echo 'a b'")}`);
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
});

test('WebSocket: the accept key of RFC 6455’s example; masked client frames decode, server frames encode', () => {
  assert.equal(acceptKey('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  const payload = Buffer.from('\x01hello');
  const mask = Buffer.from([1, 2, 3, 4]);
  const masked = Buffer.from(payload.map((b, i) => b ^ (mask[i % 4] ?? 0)));
  const frame = Buffer.concat([Buffer.from([0x82, 0x80 | payload.length]), mask, masked]);
  const d = decodeFrame(Buffer.concat([frame, Buffer.from([0x88])]));
  assert.ok(d && d !== 'invalid');
  assert.equal(d.frame.opcode, 2);
  assert.equal(d.frame.payload.toString(), '\x01hello');
  assert.equal(d.rest.length, 1, 'the next frame’s bytes are kept');
  assert.equal(decodeFrame(frame.subarray(0, 5)), undefined, 'incomplete');
  assert.equal(decodeFrame(Buffer.from([0x82, 0x01, 0x41])), 'invalid', 'an unmasked client frame');
  const big = encodeFrame(2, Buffer.alloc(70_000));
  assert.equal(big[1], 127);
  assert.equal(encodeFrame(2, Buffer.alloc(300))[1], 126);
});

test('the Status that ends a stream carries a non-zero exit code as upstream does', () => {
  assert.deepEqual(exitStatus({ exitCode: 0 }), { metadata: {}, status: 'Success' });
  assert.deepEqual(exitStatus({ exitCode: 3 }), {
    metadata: {},
    status: 'Failure',
    message: 'command terminated with non-zero exit code: exit status 3',
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: '3' }] },
  });
});

test('tailLines counts lines, not bytes, and a trailing newline is no extra line', () => {
  const text = Buffer.from('a\nb\nc\n');
  assert.equal(tailLines(text, 2).toString(), 'b\nc\n');
  assert.equal(tailLines(text, 5).toString(), 'a\nb\nc\n');
  assert.equal(tailLines(text, 0).toString(), '');
  assert.equal(tailLines(Buffer.from('a\nb'), 1).toString(), 'b');
});

test('usage: CPU is the rate of a process’s ticks between two rounds, memory its resident set', async () => {
  const { UsageSampler } = await import('../../../packages/lab/src/cluster/usage.js');
  let ticks = 100;
  let now = 1_000_000;
  const sampler = new UsageSampler(
    () => Promise.resolve(new Map([['node/worker', [42]]])),
    (pid) => (pid === 42 ? { cpuTicks: ticks, rssBytes: 2048 * 1024 } : undefined),
    () => now,
  );
  await sampler.sample();
  assert.equal(sampler.usage('node/worker')?.cpuNanoCores, 0, 'no rate from one round');
  now += 200;
  ticks += 10; // 0.1 s of CPU (100 ticks a second) in 0.2 s: half a core
  await sampler.sample();
  const u = sampler.usage('node/worker');
  assert.equal(u?.cpuNanoCores, 0.5e9);
  assert.equal(u.memoryBytes, 2048 * 1024);
});

test('readProcessUsage reads this process’s own /proc entry', async () => {
  const { readProcessUsage } = await import('../../../packages/lab/src/cluster/usage.js');
  const u = readProcessUsage(process.pid);
  assert.ok(u && u.cpuTicks >= 0 && u.rssBytes > 1024 * 1024, JSON.stringify(u));
  assert.equal(readProcessUsage(2 ** 30), undefined);
});

test('lab watch: counters per node, the last sync’s duration from the histogram’s change, a scaled sparkline', async () => {
  const { WatchView, sparkline } = await import('../../../packages/lab/src/cluster/watch-view.js');
  assert.equal(sparkline([0, 0, 0]), '▁▁▁');
  assert.equal(sparkline([0, 5, 10]), '▁▅█');
  const view = new WatchView([{ name: 'worker', namespace: 'x-worker' }]);
  const c = {
    endpointPending: 0,
    endpointTotal: 3,
    servicePending: 0,
    serviceTotal: 1,
    syncs: 2,
    syncSecondsSum: 0.2,
  };
  view.record('worker', c);
  view.record('worker', { ...c, endpointPending: 12, endpointTotal: 15 });
  view.record('worker', { ...c, endpointTotal: 15, syncs: 3, syncSecondsSum: 0.25 });
  const screen = view.render(new Date('2026-01-01T10:00:00Z'));
  assert.match(screen, /^NODE\s+EP PENDING\s+EP TOTAL\s+SVC PENDING\s+SVC TOTAL\s+SYNCS\s+LAST SYNC$/m);
  assert.match(screen, /^worker\s+0\s+15\s+0\s+1\s+3\s+50ms$/m);
  assert.match(screen, /^worker\s+▁█▁\s+\(max 12\)$/m);
  view.record('worker', undefined);
  assert.match(view.render(), /^worker\s+-.*no answer$/m);
});

test('fieldRef env: status.podIPs and status.hostIPs are every address, comma-separated, as the kubelet writes them', () => {
  const pod = {
    metadata: { name: 'netserver-0' },
    spec: { nodeName: 'worker', hostNetwork: true },
    status: {
      hostIP: '198.18.0.11',
      hostIPs: [{ ip: '198.18.0.11' }, { ip: '2001:db8::11' }],
      podIP: '198.18.0.11',
      podIPs: [{ ip: '198.18.0.11' }, { ip: '2001:db8::11' }],
    },
  };
  const ref = (name: string, fieldPath: string): object => ({ name, valueFrom: { fieldRef: { fieldPath } } });
  // upstream's netserver pods with hostNetwork endpoints: --udp-listen-addresses=$(HOST_IP),$(POD_IPS).
  const r = resolveContainer(
    pod,
    {
      name: 'webserver',
      image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
      args: ['netexec', '--udp-listen-addresses=$(HOST_IP),$(POD_IPS)'],
      env: [
        ref('HOST_IP', 'status.hostIP'),
        ref('POD_IPS', 'status.podIPs'),
        ref('HOST_IPS', 'status.hostIPs'),
      ],
    },
    [],
  );
  assert.equal(r.env.POD_IPS, '198.18.0.11,2001:db8::11');
  assert.equal(r.env.HOST_IPS, '198.18.0.11,2001:db8::11');
  assert.equal(r.argv?.at(-1), '--udp-listen-addresses=198.18.0.11,198.18.0.11,2001:db8::11');
  // A status with only the single field (an older writer): the list is that one address.
  const single = resolveContainer(
    { metadata: { name: 'p' }, status: { podIP: '198.18.1.5' } },
    { name: 'c', image: 'busybox', env: [ref('POD_IPS', 'status.podIPs')] },
    [],
  );
  assert.equal(single.env.POD_IPS, '198.18.1.5');
});

// `lab up --image`: the kube-proxy container's spec becomes a runc bundle. The command stays as the Pod spec writes
// it (the volumes are mounted at their mountPaths rather than rewritten), the node's network namespace is joined by
// path, the lab's state directory is mounted where it is, and PATH is the image's own after the lab's iptables
// back-end directory. No runc runs here: the bundle's config.json is read back.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { resolveContainer } from '../../../packages/lab/src/cluster/container-spec.js';
import {
  containerPath,
  imageContainerArgv,
  openImageRuntime,
  type ImageRuntime,
} from '../../../packages/lab/src/cluster/image-runtime.js';
import type { RuntimeSpec } from '../../../packages/lab/src/oci/runc.js';

const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

describe('the kube-proxy container from an image', () => {
  const work = mkdtempSync(join(tmpdir(), 'kpts-image-runtime-'));
  const stateDir = join(work, 'state');
  after(() => rmSync(work, { recursive: true, force: true }));
  const runtime: ImageRuntime = {
    archive: join(work, 'image.oci.tar'),
    image: {
      bundle: join(stateDir, 'image', 'bundle'),
      rootfs: join(stateDir, 'image', 'bundle', 'rootfs'),
      config: join(stateDir, 'image', 'bundle', 'config.json'),
      args: ['/usr/local/bin/kube-proxy-ts'],
      env: [`PATH=${IMAGE_PATH}`],
      cwd: '/',
    },
    runcRoot: join(stateDir, 'runc'),
    stateDir,
  };
  const lock = join(work, 'host-run', 'xtables.lock');
  const configVolume = join(stateDir, 'pods', 'p', 'volumes', 'kube-proxy');
  mkdirSync(configVolume, { recursive: true });
  const volumes = [
    { mountPath: '/var/lib/kube-proxy', hostPath: configVolume },
    { mountPath: '/run/xtables.lock', hostPath: lock, hostPathType: 'FileOrCreate' },
    // A hostPath with no type that this host lacks is left out (not created, not mounted).
    { mountPath: '/lib/modules', hostPath: join(work, 'no-such-modules') },
  ];
  const env = {
    NODE_NAME: 'worker',
    XTABLES_LOCKFILE: join(stateDir, 'nodes', 'worker', 'xtables.lock'),
    PATH: `${stateDir}/iptables-legacy/bin:/usr/local/bin:/usr/bin:/bin`,
  };

  test('a missing archive is refused before anything runs, naming what writes one', async () => {
    const ran: string[] = [];
    const runner = {
      run: (cmd: string) => (ran.push(cmd), Promise.resolve({ code: 0, stdout: '', stderr: '' })),
    };
    await assert.rejects(
      openImageRuntime(runner, join(work, 'no-such.oci.tar'), stateDir),
      /--image .*no-such\.oci\.tar: no such file \(bash scripts\/image\.sh writes one\)/,
    );
    assert.deepEqual(ran, []);
  });

  test('PATH: the lab’s back-end directory first, then the image’s own, never the host’s', () => {
    assert.equal(
      containerPath(runtime.image.env, env, stateDir),
      `${stateDir}/iptables-legacy/bin:${IMAGE_PATH}`,
    );
    assert.equal(containerPath(runtime.image.env, { PATH: '/usr/bin' }, stateDir), IMAGE_PATH);
  });

  test('the bundle: the command as written, the node namespace, the volumes and state directory mounted', () => {
    const dir = join(stateDir, 'pods', 'p', 'containers', 'kube-proxy');
    const words = ['/usr/local/bin/kube-proxy-ts', '--config=/var/lib/kube-proxy/config.conf', '--v=2'];
    const { argv, afterExit } = imageContainerArgv(runtime, {
      dir,
      id: 'uid-1-kube-proxy',
      words,
      env,
      volumes,
      netns: 'kptslab-worker',
      hostname: 'worker',
    });
    assert.deepEqual(argv.slice(0, 3), ['env', 'ID=uid-1-kube-proxy', `BUNDLE=${join(dir, 'bundle')}`]);
    assert.deepEqual(argv.slice(-3), ['runc', '--root', runtime.runcRoot]);
    assert.deepEqual(afterExit, [
      'runc',
      '--root',
      runtime.runcRoot,
      'delete',
      '--force',
      'uid-1-kube-proxy',
    ]);
    const spec = JSON.parse(readFileSync(join(dir, 'bundle', 'config.json'), 'utf8')) as RuntimeSpec;
    assert.deepEqual(spec.process.args, words, 'no path of the command is rewritten');
    assert.ok(spec.process.env.includes('NODE_NAME=worker'));
    assert.ok(spec.process.env.includes(`XTABLES_LOCKFILE=${env.XTABLES_LOCKFILE}`));
    assert.ok(spec.process.env.includes(`PATH=${stateDir}/iptables-legacy/bin:${IMAGE_PATH}`));
    assert.deepEqual(spec.root, { path: runtime.image.rootfs, readonly: true });
    assert.equal(spec.hostname, 'worker');
    assert.deepEqual(
      spec.linux.namespaces.find((n) => n.type === 'network'),
      { type: 'network', path: '/run/netns/kptslab-worker' },
    );
    const binds = spec.mounts.filter((m) => m.type === 'bind').map((m) => [m.source, m.destination]);
    assert.deepEqual(binds, [
      [stateDir, stateDir],
      [volumes[0]?.hostPath, '/var/lib/kube-proxy'],
      [lock, '/run/xtables.lock'],
    ]);
    assert.ok(existsSync(lock), 'a FileOrCreate hostPath is created, as the kubelet does');
    assert.ok(!existsSync(join(work, 'no-such-modules')), 'a missing hostPath without a type is not created');
  });

  test('resolveContainer hands only kube-proxy containers to the image, with unrewritten words', () => {
    const seen: string[][] = [];
    const launcher = (words: readonly string[]): { argv: string[]; afterExit: string[] } => {
      seen.push([...words]);
      return { argv: ['runc', 'run'], afterExit: ['runc', 'delete'] };
    };
    const pod = { metadata: { name: 'kube-proxy-x' }, spec: { nodeName: 'worker' } };
    const kubeProxy = {
      name: 'kube-proxy',
      command: ['/usr/local/bin/kube-proxy-ts', '--config=/var/lib/kube-proxy/config.conf'],
      args: ['--hostname-override=$(NODE_NAME)'],
      env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
    };
    const other = { name: 'sidecar', command: ['/bin/sleep', '/var/lib/kube-proxy/x'] };
    const r = resolveContainer(pod, kubeProxy, volumes, launcher);
    assert.deepEqual(r.argv, ['runc', 'run']);
    assert.equal(r.joinsNamespace, true, 'runc joins the namespace itself');
    assert.deepEqual(r.afterExit, ['runc', 'delete']);
    assert.deepEqual(seen, [
      [
        '/usr/local/bin/kube-proxy-ts',
        '--config=/var/lib/kube-proxy/config.conf',
        '--hostname-override=worker',
      ],
    ]);
    const s = resolveContainer(pod, other, volumes, launcher);
    assert.deepEqual(s.argv, ['/bin/sleep', `${volumes[0]?.hostPath}/x`], 'other containers as before');
    assert.equal(s.joinsNamespace, undefined);
    assert.equal(seen.length, 1);
  });
});

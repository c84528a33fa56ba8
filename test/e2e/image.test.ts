// The node image as an operator gets it: `bash scripts/image.sh` (Debian 12 from Debian's packages, Node.js from the
// npm registry, the agent package and its production dependencies; no container daemon) writes an OCI archive;
// its entry point is the agent and it holds nothing of the lab and no development tool; two builds of one commit
// give one digest. Then the lab runs every node's kube-proxy from that archive with a real OCI runtime (runc), with
// the DaemonSet's container spec: the pods are Running, `kubectl logs` shows the agent's klog lines, the node
// namespace gets the Service rules, a pod reaches a ClusterIP, /metrics and /healthz answer, SIGTERM (a rollout
// restart) ends the agent with 0, and seed 000's churn experiment holds to the same figures as without the image.
//
// KPTS_TEST_IMAGE=FILE uses an archive built before (a quicker local loop); the build-twice test then skips.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { startLab, type Lab } from '../../packages/lab/src/cluster/index.js';
import { labDown } from '../../packages/lab/src/cluster/down.js';
import { recordingLogger } from '../../packages/agent/src/util/logger.js';
import { kernelOptions, runPrefix } from '../helpers/kernel.js';
import { healthzStatus, inNetns, kubectlFor, mustRun, podViews, waitFor } from './helpers.js';
import { churnExperiment } from './helpers/churn.js';
import { labTurn } from './helpers/lab-turn.js';

const execFileP = promisify(execFile);
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const gate = kernelOptions(['ip', 'nft', 'curl', 'kubectl', 'runc', 'umoci', 'mmdebstrap', 'tar']);

interface Build {
  readonly archive: string;
  /** What image.sh printed: the manifest's and the layer's digests. */
  readonly manifest: string;
  readonly layer: string;
}

async function buildImage(out: string): Promise<Build> {
  const r = await execFileP('bash', ['scripts/image.sh', '--out', out], {
    cwd: REPO,
    timeout: 900_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  for (const line of r.stdout.split('\n'))
    if (/^image: (manifest|layer|\[\d+s\] done)/.test(line)) console.log(`# ${line}`);
  const manifest = /^image: manifest (sha256:[0-9a-f]{64})$/m.exec(r.stdout)?.[1];
  const layer = /^image: layer +(sha256:[0-9a-f]{64})/m.exec(r.stdout)?.[1];
  assert.ok(manifest && layer, `image.sh printed no digests:\n${r.stdout}`);
  // image.sh runs the image's `kube-proxy-ts --version` in its root file system: ours, then the tools it found.
  assert.match(
    r.stdout,
    /kube-proxy-ts v\d+\.\d+\.\d+\nnft: nftables v[\d.]+.*\niptables-legacy: iptables v[\d.]+ \(legacy\)\niptables-nft: iptables v[\d.]+ \(nf_tables\)/,
  );
  return { archive: out, manifest, layer };
}

/** The archive's OCI layout, read back: the image config and the paths in its layer(s). */
async function readArchive(archive: string, dir: string): Promise<{ config: unknown; paths: string[] }> {
  mkdirSync(dir, { recursive: true });
  await execFileP('tar', ['-xf', archive, '-C', dir]);
  const blob = (digest: string): string => join(dir, 'blobs', ...digest.split(':'));
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as {
    manifests: { digest: string }[];
  };
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0]?.digest ?? ''), 'utf8')) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8')) as unknown;
  const paths: string[] = [];
  for (const layer of manifest.layers) {
    const listed = await execFileP('tar', ['-tzf', blob(layer.digest)], { maxBuffer: 64 * 1024 * 1024 });
    paths.push(
      ...listed.stdout
        .split('\n')
        .filter((p) => p !== '')
        .map((p) => p.replace(/^\.\//, '')),
    );
  }
  return { config, paths };
}

describe(
  'the node image: scripts/image.sh, run by runc in the lab (issue 23)',
  { skip: gate.skip, timeout: 1_800_000 },
  () => {
    const work = mkdtempSync(join(tmpdir(), 'kpts-image-'));
    const prefix = runPrefix();
    const stateDir = join(work, 'state');
    let build: Build | undefined;
    let lab: Lab | undefined;
    const logger = recordingLogger();
    let releaseTurn: () => void = () => undefined;

    before(
      async () => {
        // The lab suites' turn, taken before the builds too: two minutes of mmdebstrap, npm and umoci on both
        // cores beside a soak would starve its timing-sensitive load.
        releaseTurn = await labTurn();
        const prebuilt = process.env.KPTS_TEST_IMAGE;
        build = prebuilt
          ? { archive: prebuilt, manifest: '', layer: '' }
          : await buildImage(join(work, 'a', 'kube-proxy-ts.oci.tar'));
      },
      { timeout: 1_800_000 },
    );

    after(async () => {
      await lab?.stop().catch(() => undefined);
      await labDown(stateDir, { prefix }).catch(() => undefined);
      releaseTurn();
      rmSync(work, { recursive: true, force: true });
    });

    test('the archive: the agent as entry point, Debian’s tools, nothing of the lab, no development tool', async () => {
      assert.ok(build);
      const { config, paths } = await readArchive(build.archive, join(work, 'layout'));
      const c = config as { config?: { Entrypoint?: string[] }; os?: string };
      assert.deepEqual(c.config?.Entrypoint, ['/usr/local/bin/kube-proxy-ts']);
      assert.equal(c.os, 'linux');
      const has = (p: string): boolean => paths.includes(p);
      for (const p of [
        'usr/local/bin/kube-proxy-ts',
        'usr/local/bin/node',
        'opt/kube-proxy-ts/package.json',
        'opt/kube-proxy-ts/dist/cli/main.js',
        'opt/kube-proxy-ts/dist/sync/proxier.js',
        'opt/kube-proxy-ts/node_modules/koffi/package.json',
        'opt/kube-proxy-ts/node_modules/prom-client/package.json',
        'usr/sbin/nft',
        'usr/sbin/iptables-legacy',
        'usr/sbin/iptables-nft',
        'usr/sbin/conntrack',
        'etc/ssl/certs/ca-certificates.crt',
      ])
        assert.ok(has(p), `${p} is in the image`);
      const app = paths.filter((p) => p.startsWith('opt/kube-proxy-ts/'));
      const lab = app.filter((p) =>
        /\/(lab|netns|apiserver|controllers|soak|web|@kube-proxy-ts)(\/|$)|pod-server/.test(p),
      );
      assert.deepEqual(lab, [], 'nothing of the lab or the netns kit');
      const dev = app.filter((p) =>
        /^opt\/kube-proxy-ts\/node_modules\/(typescript|tsx|eslint|prettier|playwright-core|uplot|esbuild)\//.test(
          p,
        ),
      );
      assert.deepEqual(dev, [], 'no development dependency and no lab dependency');
      assert.deepEqual(
        app.filter((p) => p.startsWith('opt/kube-proxy-ts/dist/') && !/(\/|\.js)$/.test(p)),
        [],
        'the agent as compiled JavaScript only (no sources, declarations or maps)',
      );
    });

    test(
      'a second build of the same commit gives the same digests',
      { skip: process.env.KPTS_TEST_IMAGE ? 'KPTS_TEST_IMAGE: a prebuilt archive' : false },
      async () => {
        assert.ok(build);
        const second = await buildImage(join(work, 'b', 'kube-proxy-ts.oci.tar'));
        assert.equal(second.layer, build.layer, 'the layer digest');
        assert.equal(second.manifest, build.manifest, 'the manifest digest');
      },
    );

    test('lab up --image: every node’s kube-proxy runs from the image, by runc; pods Running; logs; rules; traffic', async () => {
      assert.ok(build);
      lab = await startLab({
        nodes: 2,
        mode: 'nftables',
        stateDir,
        prefix,
        image: build.archive,
        logger,
        web: false,
      });
      const k = kubectlFor(lab.kubeconfigPath);
      // Ready once each proxy's readiness probe (its first sync, on its metrics) has passed.
      const pods = await waitFor('both kube-proxy pods ready', 60_000, async () => {
        const views = podViews(
          await k.json(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=kube-proxy']),
        );
        return views.length === 2 && views.every((p) => p.ready) ? views : undefined;
      });
      assert.deepEqual(pods.map((p) => p.node).sort(), ['control-plane', 'worker']);
      assert.ok(
        pods.every((p) => p.ready && !p.terminating),
        JSON.stringify(pods),
      );
      const phases = await k.run([
        '-n',
        'kube-system',
        'get',
        'pods',
        '-l',
        'k8s-app=kube-proxy',
        '-o',
        'jsonpath={.items[*].status.phase}',
      ]);
      assert.equal(phases.trim(), 'Running Running');

      for (const node of ['control-plane', 'worker']) {
        const netns = `${prefix}-${node}`;
        // The process serving this node is the image's Node.js and the image's agent, not this checkout's.
        const pids = (await mustRun('ip', ['netns', 'pids', netns])).split('\n').filter((p) => p !== '');
        const agents = pids.filter((pid) => {
          try {
            const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
            return (
              readlinkSync(`/proc/${pid}/exe`) === '/usr/local/bin/node' &&
              cmdline.includes('/opt/kube-proxy-ts/dist/cli/main.js')
            );
          } catch {
            return false;
          }
        });
        assert.equal(agents.length, 1, `one agent from the image in ${netns}`);
        const table = await inNetns(netns, ['nft', 'list', 'table', 'ip', 'kube-proxy']);
        assert.match(table, /chain service-\w{8}-svc\/web\/tcp\/http/, 'the Service rules are programmed');
        const metrics = await inNetns(netns, ['curl', '-s', 'http://127.0.0.1:10249/metrics']);
        assert.match(metrics, /^kubeproxy_sync_proxy_rules_last_timestamp_seconds\S* [1-9]/m);
        const healthz = await healthzStatus(netns);
        assert.equal(healthz, '200');
      }

      const logs = await k.run(['-n', 'kube-system', 'logs', '-l', 'k8s-app=kube-proxy', '--tail=-1']);
      assert.match(
        logs,
        /^I\d{4} [\d:.]{15} +\d+ [\w.-]+:\d+\] "starting kube-proxy-ts"/m,
        'klog lines with the caller',
      );

      const web = podViews(await k.json(['-n', 'svc', 'get', 'pods', '-l', 'app=web']));
      const from = web.find((p) => p.ready)?.name;
      assert.ok(from);
      const answer = await waitFor('a pod reaches web.svc', 60_000, async () => {
        const r = await k.run([
          '-n',
          'svc',
          'exec',
          from,
          '--',
          'curl',
          '-s',
          '--max-time',
          '3',
          'http://web.svc/hostname',
        ]);
        return /^web-/.test(r.trim()) ? r : undefined;
      });
      assert.match(answer, /^web-/);
    });

    test('SIGTERM (a rollout restart) ends each image agent with exit code 0', async () => {
      assert.ok(lab);
      const k = kubectlFor(lab.kubeconfigPath);
      await k.sh(
        'kubectl -n kube-system rollout restart ds kube-proxy && kubectl -n kube-system rollout status ds kube-proxy --timeout=120s',
      );
      const stopped = await waitFor('both old containers reported', 60_000, async () => {
        const r = logger.records.filter(
          (x) => x.msg === 'container stopped' && x.fields.container === 'kube-proxy',
        );
        return r.length >= 2 ? r : undefined;
      });
      assert.deepEqual(
        stopped.map((r) => r.fields.exitCode),
        [0, 0],
      );
    });

    test('seed 000’s churn experiment from the image: the same figures as without it', async () => {
      assert.ok(lab);
      const figures = await churnExperiment(lab, prefix);
      assert.equal(figures.serviceChanges, 0);
    });
  },
);

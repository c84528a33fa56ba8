// The lab kubelet's order of a Pod's containers (pod-containers.ts), with processes faked at the CommandRunner seam:
// init containers one after another to completion, a failed one retried with back-off (or, under restartPolicy
// Never, failing the Pod); sidecars started in order and kept running; app containers after them; on deletion the
// app containers stopped before the sidecars, last sidecar first; a Pod whose app containers completed stops its
// sidecars. Every wait is for a report (an event), never a sleep.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult } from '../../../packages/agent/src/netfilter/command.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';
import { ContainerProcess } from '../../../packages/lab/src/cluster/containers.js';
import {
  containerRestartPolicy,
  declaredContainers,
  PodContainers,
} from '../../../packages/lab/src/cluster/pod-containers.js';
import { resolveContainer } from '../../../packages/lab/src/cluster/container-spec.js';
import { str, type JsonObject } from '../../../packages/lab/src/apiserver/json.js';
import type { PodStatusReport } from '../../../packages/lab/src/controllers/pod-lifecycle.js';
import { FakeContainerRuntime } from './fake-runtime.js';
import { fileTempDir } from '../../helpers/temp-dir.js';

const dir = fileTempDir('kpts-pod-containers-');

/** One launched process of the fake runtime: its command line, and how the test ends it. */
interface Launch {
  readonly argv: readonly string[];
  readonly pid: number;
  exit(code: number): void;
}

/** A container runtime at the CommandRunner seam: launches are recorded, ended by the test or by `kill`. */
class FakeRuntime extends FakeContainerRuntime {
  readonly launches: Launch[] = [];
  /** Command lines in the order `kill -s TERM` reached them. */
  readonly terminated: string[] = [];
  private nextPid = 1000;

  protected onSignal(_signal: string, pid: string): void {
    const launch = this.launches.find((l) => String(l.pid) === pid);
    if (launch) {
      this.terminated.push(launch.argv.join(' '));
      launch.exit(143);
    }
  }

  protected onLaunch(
    _cmd: string,
    args: readonly string[],
    env: Record<string, string>,
  ): Promise<CommandResult> {
    // sh -c LAUNCH sh ip netns exec NS argv…: the container's own argv follows the namespace.
    const argv = args.slice(args.indexOf('exec') + 2);
    const pid = this.nextPid++;
    this.writePid(env, pid);
    return new Promise((resolve) => {
      let ended = false;
      this.launches.push({
        argv,
        pid,
        exit: (code) => {
          if (ended) return;
          ended = true;
          resolve({ code, stdout: '', stderr: '' });
        },
      });
    });
  }

  /** The running launch of `name` (its argv is `run NAME`). */
  current(name: string): Launch {
    const l = this.launches.filter((x) => x.argv[1] === name).at(-1);
    assert.ok(l, `${name} was launched`);
    return l;
  }
  launched(): string[] {
    return this.launches.map((l) => l.argv[1] ?? '');
  }
}

const container = (name: string, extra: JsonObject = {}): JsonObject => ({
  name,
  image: 'busybox',
  command: ['run', name],
  ...extra,
});
/** An init container that keeps running beside the app: a sidecar. */
const sidecar = (name: string): JsonObject => container(name, { restartPolicy: 'Always' });

interface Harness {
  readonly runtime: FakeRuntime;
  readonly pod: PodContainers;
  readonly reports: PodStatusReport[];
  readonly servers: string[];
  /** The first report (from now on, or the latest one) that satisfies `pred`. */
  until(what: string, pred: (r: PodStatusReport) => boolean): Promise<PodStatusReport>;
  /** The first report once container `name` has been launched. */
  started(name: string): Promise<PodStatusReport>;
}

function harness(spec: JsonObject): Harness {
  const runtime = new FakeRuntime(dir);
  const podObj: JsonObject = { metadata: { name: 'p', namespace: 'default' }, spec };
  const podDir = mkdtempSync(join(dir, 'pod-'));
  const reports: PodStatusReport[] = [];
  const waiters = new Set<() => void>();
  const servers: string[] = [];
  const pod = new PodContainers({
    containers: declaredContainers(podObj, (c) => resolveContainer(podObj, c, [])),
    restartPolicy: (spec.restartPolicy as 'Always' | 'OnFailure' | 'Never' | undefined) ?? 'Always',
    process: (d, policy, changed) =>
      new ContainerProcess(
        runtime,
        'kpts-test-pod',
        { ...d.resolved, argv: d.resolved.argv ?? [] },
        podDir,
        policy,
        'p_default',
        { changed },
        SILENT_LOGGER,
      ),
    startServer: () => {
      servers.push(`server after ${runtime.launched().join(',')}`);
      return Promise.resolve();
    },
    startTime: '2025-03-01T12:00:00Z',
    report: (r) => {
      reports.push(r);
      for (const w of [...waiters]) w();
    },
    failed: (e) => assert.fail(String(e)),
  });
  const until = (what: string, pred: (r: PodStatusReport) => boolean): Promise<PodStatusReport> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`${what}: no such report within 10 s; last: ${JSON.stringify(reports.at(-1))}`));
      }, 10_000); // a deadline for a clear failure, not a wait
      const check = (): void => {
        const last = reports.at(-1);
        if (!last || !pred(last)) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(last);
      };
      waiters.add(check);
      check();
    });
  const started = (name: string): Promise<PodStatusReport> =>
    until(`${name} started`, () => runtime.launched().includes(name));
  return { runtime, pod, reports, servers, until, started };
}

const stateOf = (statuses: readonly JsonObject[] | undefined, name: string): string => {
  const s = statuses?.find((c) => str(c, 'name') === name);
  const state = (s?.state ?? {}) as JsonObject;
  const [kind = '?'] = Object.keys(state);
  const detail = state[kind] as JsonObject;
  return `${kind}${str(detail, 'reason') ? `:${str(detail, 'reason')}` : ''}`;
};

test('restart policies: sidecars always, plain init containers on failure unless the Pod says Never', () => {
  assert.equal(containerRestartPolicy('sidecar', 'Never'), 'Always');
  assert.equal(containerRestartPolicy('init', 'Always'), 'OnFailure');
  assert.equal(containerRestartPolicy('init', 'OnFailure'), 'OnFailure');
  assert.equal(containerRestartPolicy('init', 'Never'), 'Never');
  assert.equal(containerRestartPolicy('app', 'OnFailure'), 'OnFailure');
});

test('init containers run one after another to completion; sidecars start in order; then the app', async () => {
  const h = harness({
    initContainers: [container('setup'), sidecar('proxy'), container('migrate'), sidecar('logs')],
    containers: [container('app')],
  });
  await h.pod.begin();
  let r = await h.until('Pending with setup running', (x) => x.phase === 'Pending');
  assert.deepEqual(h.runtime.launched(), ['setup']);
  assert.equal(r.initialized, false);
  assert.equal(stateOf(r.initContainerStatuses, 'setup'), 'running');
  assert.equal(stateOf(r.initContainerStatuses, 'proxy'), 'waiting:PodInitializing');
  assert.equal(stateOf(r.containerStatuses, 'app'), 'waiting:PodInitializing');

  h.runtime.current('setup').exit(0);
  r = await h.started('migrate');
  // The sidecar only had to start for the next init container to begin; it keeps running.
  assert.deepEqual(h.runtime.launched(), ['setup', 'proxy', 'migrate']);
  assert.equal(stateOf(r.initContainerStatuses, 'setup'), 'terminated:Completed');
  assert.equal(r.initContainerStatuses?.find((c) => c.name === 'setup')?.ready, true);
  assert.equal(stateOf(r.initContainerStatuses, 'proxy'), 'running');
  assert.equal(r.phase, 'Pending');

  h.runtime.current('migrate').exit(0);
  r = await h.until(
    'Running',
    (x) => x.phase === 'Running' && stateOf(x.containerStatuses, 'app') === 'running',
  );
  assert.deepEqual(h.runtime.launched(), ['setup', 'proxy', 'migrate', 'logs', 'app']);
  assert.equal(r.initialized, true);
  assert.deepEqual(
    r.initContainerStatuses?.map((c) => [c.name, c.ready, c.started]),
    [
      ['setup', true, false],
      ['proxy', true, true],
      ['migrate', true, false],
      ['logs', true, true],
    ],
  );
  await h.pod.stop(1000);
});

test('a failing init container is retried with back-off (Init:CrashLoopBackOff) and the app waits', async () => {
  const h = harness({ initContainers: [container('setup')], containers: [container('app')] });
  await h.pod.begin();
  h.runtime.current('setup').exit(1);
  let r = await h.until(
    'back-off',
    (x) => stateOf(x.initContainerStatuses, 'setup') === 'waiting:CrashLoopBackOff',
  );
  assert.equal(r.phase, 'Pending');
  assert.equal(r.initContainerStatuses?.[0]?.restartCount, 1);
  assert.equal(stateOf(r.containerStatuses, 'app'), 'waiting:PodInitializing');
  assert.deepEqual(h.runtime.launched(), ['setup']);
  // The back-off (1 s) ends in a second run; its success lets the app start.
  await h.until('second run', () => h.runtime.launched().length === 2);
  h.runtime.current('setup').exit(0);
  r = await h.until('Running', (x) => x.phase === 'Running' && h.runtime.launched().includes('app'));
  assert.equal(r.initialized, true);
  await h.pod.stop(1000);
});

test('under restartPolicy Never a failed init container fails the Pod and stops its sidecars', async () => {
  const h = harness({
    restartPolicy: 'Never',
    initContainers: [sidecar('proxy'), container('setup')],
    containers: [container('app')],
  });
  await h.pod.begin();
  await h.started('setup');
  h.runtime.current('setup').exit(2);
  const r = await h.until(
    'Failed',
    (x) => x.phase === 'Failed' && stateOf(x.initContainerStatuses, 'proxy') === 'terminated:Error',
  );
  assert.equal(stateOf(r.initContainerStatuses, 'setup'), 'terminated:Error');
  assert.deepEqual(h.runtime.launched(), ['proxy', 'setup'], 'the app never started');
});

test('a sidecar that exits is restarted; the app keeps running', async () => {
  const h = harness({
    initContainers: [sidecar('proxy')],
    containers: [container('app')],
  });
  await h.pod.begin();
  await h.until('Running', (x) => x.phase === 'Running' && h.runtime.launched().includes('app'));
  h.runtime.current('proxy').exit(1);
  await h.until('proxy restarted', () => h.runtime.launched().filter((n) => n === 'proxy').length === 2);
  const r = await h.until('proxy running', (x) => stateOf(x.initContainerStatuses, 'proxy') === 'running');
  assert.equal(r.initContainerStatuses?.[0]?.restartCount, 1);
  assert.equal(r.phase, 'Running');
  assert.deepEqual(h.runtime.launched(), ['proxy', 'app', 'proxy']);
  await h.pod.stop(1000);
});

test('on deletion the app containers stop first, then the sidecars, last started first', async () => {
  const h = harness({
    initContainers: [sidecar('first'), sidecar('second')],
    containers: [container('app')],
  });
  await h.pod.begin();
  await h.until('Running', (x) => x.phase === 'Running' && h.runtime.launched().includes('app'));
  await h.pod.stop(5000);
  assert.deepEqual(h.runtime.terminated, ['run app', 'run second', 'run first']);
});

test('when every app container has completed, the sidecars are stopped and the Pod succeeds', async () => {
  const h = harness({
    restartPolicy: 'Never',
    initContainers: [sidecar('proxy')],
    containers: [container('job')],
  });
  await h.pod.begin();
  await h.started('job');
  h.runtime.current('job').exit(0);
  const r = await h.until(
    'Succeeded',
    (x) => x.phase === 'Succeeded' && stateOf(x.initContainerStatuses, 'proxy').startsWith('terminated'),
  );
  assert.equal(stateOf(r.containerStatuses, 'job'), 'terminated:Completed');
  assert.deepEqual(h.runtime.terminated, ['run proxy']);
});

test('without a command an init container completes at once; a sidecar is answered by the pod server in turn', async () => {
  const h = harness({
    initContainers: [
      { name: 'noop', image: 'busybox' },
      container('setup'),
      { name: 'web-sidecar', image: 'nginx', restartPolicy: 'Always' },
    ],
    containers: [container('app')],
  });
  await h.pod.begin();
  let r = await h.started('setup');
  assert.equal(stateOf(r.initContainerStatuses, 'noop'), 'terminated:Completed');
  assert.deepEqual(h.servers, []);
  h.runtime.current('setup').exit(0);
  r = await h.until('Running', (x) => x.phase === 'Running' && h.runtime.launched().includes('app'));
  assert.deepEqual(h.servers, ['server after setup'], 'the pod server started after setup, before the app');
  assert.equal(stateOf(r.initContainerStatuses, 'web-sidecar'), 'running');
  assert.equal(r.initContainerStatuses?.find((c) => c.name === 'web-sidecar')?.ready, true);
  await h.pod.stop(1000);
});

test('a Pod without init containers reports no init statuses and starts everything in begin()', async () => {
  const h = harness({ containers: [container('a'), container('b')] });
  await h.pod.begin();
  assert.deepEqual(h.runtime.launched(), ['a', 'b']);
  const r = h.pod.status();
  assert.equal(r.initContainerStatuses, undefined);
  assert.equal(r.initialized, undefined);
  assert.equal(r.phase, 'Running');
  await h.pod.stop(1000);
});

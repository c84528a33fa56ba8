// Runs ported tests against a cluster as ginkgo runs upstream's: each in a namespace of its own (named from
// upstream's base name, deleted afterwards), its deferred cleanups run last-first whatever happened, and a result
// per test with the failure's message and the test's log.
import { randomBytes } from 'node:crypto';
import { field, fieldArray, fieldString, type Kube } from './kube.js';
import type { NodeView, NotPortedTest, PortedTest, UpstreamContext } from './registry-types.js';

export type Outcome = 'passed' | 'failed' | 'not-ported';

export interface TestResult {
  readonly name: string;
  readonly conformance: boolean;
  readonly file: string;
  readonly outcome: Outcome;
  readonly seconds?: number;
  /** failed: why; not-ported: the reason. */
  readonly message?: string;
  /** failed: the test's steps and log lines. */
  readonly log?: readonly string[];
}

export interface RunOptions {
  readonly signal: AbortSignal;
  /** How many tests run at once (ginkgo -p); [Serial] tests always run alone, after the others. Default 1. */
  readonly parallel?: number;
  /** Live progress (one line per step), e.g. to stderr; the report comes after. */
  readonly progress?: (line: string) => void;
}

/** e2enode.GetReadySchedulableNodes: Ready, not cordoned, by name, with their InternalIP. */
export async function readySchedulableNodes(kube: Kube): Promise<NodeView[]> {
  const nodes = await kube.list('', 'nodes');
  return nodes
    .filter((n) => field(n, 'spec', 'unschedulable') !== true)
    .filter((n) =>
      fieldArray(n, 'status', 'conditions').some(
        (c) => field(c, 'type') === 'Ready' && field(c, 'status') === 'True',
      ),
    )
    .map((n) => ({
      name: fieldString(n, 'metadata', 'name'),
      internalIP: fieldString(
        fieldArray(n, 'status', 'addresses').find((a) => field(a, 'type') === 'InternalIP'),
        'address',
      ),
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** framework.NewDefaultFramework("services"): a namespace named from the base and a random suffix. */
function namespaceFor(test: PortedTest): string {
  const base = test.file.replace(/\.go$/, '') === 'service' ? 'services' : test.file.replace(/\.go$/, '');
  return `${base}-${randomBytes(2).toString('hex')}`;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function runCleanups(cleanups: (() => Promise<void>)[], log: (l: string) => void): Promise<string[]> {
  const errors: string[] = [];
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (e) {
      errors.push(messageOf(e));
      log(`cleanup failed: ${messageOf(e)}`);
    }
  }
  return errors;
}

/** One test in its own namespace: create it, run, clean up, delete the namespace (not waiting for it to go). */
export async function runOne(
  kube: Kube,
  test: PortedTest,
  nodes: readonly NodeView[],
  o: RunOptions,
): Promise<TestResult> {
  const started = Date.now();
  const lines: string[] = [];
  const log = (line: string): void => {
    lines.push(line);
    o.progress?.(`  ${namespace}: ${line}`);
  };
  const namespace = namespaceFor(test);
  const cleanups: (() => Promise<void>)[] = [];
  const ctx: UpstreamContext = {
    kube,
    namespace,
    nodes,
    signal: o.signal,
    log,
    step: (what) => log(`STEP: ${what}`),
    defer: (cleanup) => void cleanups.push(cleanup),
  };
  o.progress?.(`[It] ${test.name} (namespace ${namespace})`);
  let failure: string | undefined;
  try {
    await kube.mustRun(['create', 'namespace', namespace]);
    await test.run(ctx);
  } catch (e) {
    failure = messageOf(e);
    log(`FAIL: ${failure}`);
  }
  const cleanupErrors = await runCleanups(cleanups, log);
  if (failure === undefined && cleanupErrors.length > 0) failure = `cleanup: ${cleanupErrors.join('; ')}`;
  const deleted = await kube.run(['delete', 'namespace', namespace, '--wait=false']);
  if (deleted.code !== 0) log(`could not delete namespace ${namespace}: ${deleted.stderr.trim()}`);
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const base = { name: test.name, conformance: test.conformance, file: test.file, seconds };
  return failure === undefined
    ? { ...base, outcome: 'passed' }
    : { ...base, outcome: 'failed', message: failure, log: lines };
}

export async function runTests(
  kube: Kube,
  tests: readonly PortedTest[],
  o: RunOptions,
): Promise<TestResult[]> {
  const nodes = await readySchedulableNodes(kube);
  const byName = new Map<string, TestResult>();
  const runAll = async (batch: readonly PortedTest[], width: number): Promise<void> => {
    const queue = [...batch];
    const worker = async (): Promise<void> => {
      for (let t = queue.shift(); t !== undefined && !o.signal.aborted; t = queue.shift()) {
        byName.set(t.name, await runOne(kube, t, nodes, o));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(width, batch.length)) }, worker));
  };
  await runAll(
    tests.filter((t) => t.serial !== true),
    o.parallel ?? 1,
  );
  await runAll(
    tests.filter((t) => t.serial === true),
    1,
  );
  // The report keeps the registry's order, whatever order the tests finished in.
  return tests.flatMap((t) => byName.get(t.name) ?? []);
}

export function notPortedResults(tests: readonly NotPortedTest[]): TestResult[] {
  return tests.map((t) => ({
    name: t.name,
    conformance: t.conformance,
    file: t.file,
    outcome: 'not-ported',
    message: t.reason,
  }));
}

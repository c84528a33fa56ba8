// `npm run e2e:upstream -- --mode nftables|nftables-flat|iptables [--conformance] [--only REGEX] [--parallel N]
// [--ip-family ipv4|dual] [--nodes N] [--zones A,B,…] [--control-plane-taint] [--kubeconfig PATH] [-o text|json]`:
// brings up a lab in that mode (default: dual-stack, two nodes in zones zone-a and zone-b, so every ported test that
// needs only that runs; --control-plane-taint taints the control-plane node as kubeadm does, for the tests that
// need every schedulable node to be a worker)
// or, with --kubeconfig, uses a cluster that is already up, such as a `lab up`, and takes --mode as the report's
// label (what the cluster offers is found out, not taken from the flags). Runs the selected ports of upstream's e2e
// tests, prints the report (tests whose requirement the cluster does not meet: SKIPPED, with the reason), and exits
// 0 only when every test that ran passed. Ctrl-C stops the run and takes the lab it brought up down.
import { parseArgs } from 'node:util';
import { selectTests } from './registry.js';
import { notPortedResults, runTests } from './runner.js';
import { formatJson, formatText, makeReport, reportPassed } from './report.js';
import {
  DEFAULT_UPSTREAM_NODES,
  DEFAULT_UPSTREAM_ZONES,
  isUpstreamMode,
  startUpstreamLab,
  UPSTREAM_IP_FAMILIES,
  UPSTREAM_MODES,
  type UpstreamIPFamily,
  type UpstreamMode,
} from './lab-session.js';
import { Kube } from './kube.js';

const USAGE = `usage: npm run e2e:upstream -- --mode ${UPSTREAM_MODES.join('|')} [--conformance] [--only REGEX] [--parallel N] [--ip-family ${UPSTREAM_IP_FAMILIES.join('|')}] [--nodes N] [--zones A,B,…] [--control-plane-taint] [--kubeconfig PATH] [-o text|json]`;

/** The lab's families when --ip-family is not given: dual-stack, so the dual-stack ports run in the same lab. */
const DEFAULT_IP_FAMILY: UpstreamIPFamily = 'dual';

interface Cli {
  readonly mode: UpstreamMode;
  readonly conformanceOnly: boolean;
  readonly only?: RegExp;
  readonly output: 'text' | 'json';
  readonly parallel: number;
  readonly kubeconfig?: string;
  readonly ipFamily: UpstreamIPFamily;
  readonly nodes: number;
  readonly zones: readonly string[];
  readonly controlPlaneTaint: boolean;
}

function usageError(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseCli(argv: string[]): Cli {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        mode: { type: 'string' },
        conformance: { type: 'boolean', default: false },
        only: { type: 'string' },
        output: { type: 'string', short: 'o', default: 'text' },
        parallel: { type: 'string', default: '1' },
        kubeconfig: { type: 'string' },
        'ip-family': { type: 'string', default: DEFAULT_IP_FAMILY },
        nodes: { type: 'string', default: String(DEFAULT_UPSTREAM_NODES) },
        zones: { type: 'string', default: DEFAULT_UPSTREAM_ZONES.join(',') },
        'control-plane-taint': { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (e) {
    usageError(e instanceof Error ? e.message : String(e));
  }
  const mode = values.mode ?? '';
  if (!isUpstreamMode(mode)) usageError(`--mode must be one of ${UPSTREAM_MODES.join(', ')}`);
  if (values.output !== 'text' && values.output !== 'json') usageError('-o must be text or json');
  let only: RegExp | undefined;
  try {
    only = values.only === undefined ? undefined : new RegExp(values.only);
  } catch (e) {
    usageError(`--only: ${e instanceof Error ? e.message : String(e)}`);
  }
  const parallel = Number(values.parallel);
  if (!Number.isInteger(parallel) || parallel < 1)
    usageError('--parallel must be a whole number of at least 1');
  const ipFamily = values['ip-family'];
  if (!(UPSTREAM_IP_FAMILIES as readonly string[]).includes(ipFamily))
    usageError(`--ip-family must be one of ${UPSTREAM_IP_FAMILIES.join(', ')}`);
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1) usageError('--nodes must be a whole number of at least 1');
  const zones = values.zones.split(',').filter((z) => z !== '');
  if (
    values.kubeconfig !== undefined &&
    argv.some((a) => /^--(ip-family|nodes|zones|control-plane-taint)\b/.test(a))
  )
    usageError(
      '--ip-family, --nodes, --zones and --control-plane-taint shape a lab the run brings up; with --kubeconfig the cluster is what it is',
    );
  if (values['control-plane-taint'] && nodes < 2)
    usageError('--control-plane-taint needs --nodes 2 or more (3 for workers in 2 zones)');
  return {
    mode,
    ipFamily: ipFamily as UpstreamIPFamily,
    nodes,
    zones,
    controlPlaneTaint: values['control-plane-taint'],
    conformanceOnly: values.conformance,
    output: values.output,
    parallel,
    ...(only ? { only } : {}),
    ...(values.kubeconfig !== undefined ? { kubeconfig: values.kubeconfig } : {}),
  };
}

async function main(): Promise<number> {
  const cli = parseCli(process.argv.slice(2));
  // stdout carries the report alone (-o json is read by programs); what helpers print (labTurn's wait) is progress.
  console.log = (...args: unknown[]): void => console.error(...args);
  const selected = selectTests(cli);
  if (selected.ported.length === 0) usageError('no ported test matches the selection');
  const abort = new AbortController();
  const onSigint = (): void => abort.abort(new Error('interrupted (SIGINT)'));
  process.on('SIGINT', onSigint);
  const progress = (line: string): void => void process.stderr.write(`${line}\n`);
  try {
    const lab =
      cli.kubeconfig === undefined
        ? await startUpstreamLab(cli.mode, {
            signal: abort.signal,
            progress,
            ipFamily: cli.ipFamily,
            nodes: cli.nodes,
            zones: cli.zones,
            controlPlaneTaint: cli.controlPlaneTaint,
          })
        : { kube: new Kube(cli.kubeconfig), stop: (): Promise<void> => Promise.resolve() };
    try {
      const run = {
        signal: abort.signal,
        progress,
        parallel: cli.parallel,
        ...('restartApiServer' in lab ? { restartApiServer: () => lab.restartApiServer() } : {}),
      };
      const results = await runTests(lab.kube, selected.ported, run);
      const report = makeReport(cli.mode, [...results, ...notPortedResults(selected.notPorted)]);
      process.stdout.write(`${cli.output === 'json' ? formatJson(report) : formatText(report)}\n`);
      return reportPassed(report) && !abort.signal.aborted ? 0 : 1;
    } finally {
      await lab.stop();
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`e2e:upstream: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);

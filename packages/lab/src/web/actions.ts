// What the page's buttons do. The seed experiments are the walkthrough's own kubectl command lines, run as
// written (`sh -c`, real kubectl, the lab's kubeconfig), and the page shows each line with its output. Explain and
// trace are the CLI's own commands (`kube-proxy-ts explain … -o json`, `kube-proxy-ts lab trace … -o json`), run
// as processes as the lab runs the agent: the decision of which endpoints a node uses is made in one place
// (src/inspect, through the CLI), and the web code only draws its answer.
import type { CommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { agentCliArgv, labCliArgv } from '../cluster/processes.js';

export interface Experiment {
  readonly id: string;
  readonly title: string;
  /** Which section of docs/lab-walkthrough.md shows it. */
  readonly walkthrough: string;
  /** Shell lines, run one after the other; the run stops at the first that fails. */
  readonly commands: readonly string[];
}

const ROLLOUT =
  'kubectl -n kube-system rollout restart ds kube-proxy && kubectl -n kube-system rollout status ds kube-proxy --timeout=120s';

function modeSwitch(from: string, to: string): Experiment {
  return {
    id: `mode-${to}`,
    title: `switch the proxies to ${to} mode (ConfigMap, then rollout restart)`,
    walkthrough: '4. Switching backends',
    commands: [
      `kubectl -n kube-system get configmap kube-proxy -o yaml | sed 's/mode: ${from}/mode: ${to}/' | kubectl replace -f -`,
      ROLLOUT,
    ],
  };
}

export const EXPERIMENTS: readonly Experiment[] = [
  {
    id: 'slow-sync',
    title: 'minSyncPeriod 15s, so that changes queue up between syncs (ConfigMap, then rollout restart)',
    walkthrough: '5. Churn',
    commands: [
      "kubectl -n kube-system get configmap kube-proxy -o yaml | sed 's/minSyncPeriod: 1s/minSyncPeriod: 15s/' | kubectl replace -f -",
      ROLLOUT,
    ],
  },
  {
    id: 'fast-sync',
    title: 'minSyncPeriod back to 1s (ConfigMap, then rollout restart)',
    walkthrough: '5. Churn',
    commands: [
      "kubectl -n kube-system get configmap kube-proxy -o yaml | sed 's/minSyncPeriod: 15s/minSyncPeriod: 1s/' | kubectl replace -f -",
      ROLLOUT,
    ],
  },
  {
    id: 'scale-12',
    title: 'churn: scale web to 12',
    walkthrough: '5. Churn',
    commands: ['kubectl -n svc scale deployment web --replicas=12'],
  },
  {
    id: 'scale-3',
    title: 'churn: scale web back to 3',
    walkthrough: '5. Churn',
    commands: ['kubectl -n svc scale deployment web --replicas=3'],
  },
  {
    id: 'delete-pods',
    title: 'churn: delete the web pods',
    walkthrough: '5. Churn',
    commands: ['kubectl -n svc delete pod -l app=web --wait=false'],
  },
  modeSwitch('nftables', 'iptables'),
  modeSwitch('iptables', 'nftables'),
];

export interface StepResult {
  readonly command: string;
  readonly code?: number;
  readonly output?: string;
}

export interface ActionRun {
  readonly id: number;
  readonly experiment: string;
  readonly title: string;
  readonly state: 'running' | 'ok' | 'failed';
  readonly steps: readonly StepResult[];
  readonly startedAt: number;
  readonly endedAt?: number;
}

/** Thrown for a request the page should show as its error (unknown experiment, busy, a failing command). */
export class ActionError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 404 | 409 | 500 = 400,
  ) {
    super(message);
  }
}

const OUTPUT_LIMIT = 20_000;

function clip(text: string): string {
  return text.length > OUTPUT_LIMIT
    ? `${text.slice(0, OUTPUT_LIMIT)}\n… (${text.length - OUTPUT_LIMIT} more bytes)`
    : text;
}

export interface ActionsOptions {
  readonly runner: CommandRunner;
  readonly kubeconfig: string;
  readonly stateDir: string;
  /** A node's config.conf copy (the ConfigMap's): explain reads the mode and pod range from it. */
  readonly nodeConfig: string;
  /** Every change of a run (started, each step, ended), for the page's log. */
  readonly onRun: (run: ActionRun) => void;
}

export class LabActions {
  private nextId = 1;
  private current: ActionRun | undefined;
  private readonly history: ActionRun[] = [];

  constructor(private readonly o: ActionsOptions) {}

  runs(): readonly ActionRun[] {
    return this.history;
  }

  /** Starts an experiment; resolves when it has ended. One at a time. */
  async run(id: string): Promise<ActionRun> {
    const ex = EXPERIMENTS.find((e) => e.id === id);
    if (!ex)
      throw new ActionError(
        `no experiment ${JSON.stringify(id)} (${EXPERIMENTS.map((e) => e.id).join(', ')})`,
        404,
      );
    if (this.current?.state === 'running')
      throw new ActionError(`"${this.current.title}" is still running; wait for it to end`, 409);
    let run: ActionRun = {
      id: this.nextId++,
      experiment: ex.id,
      title: ex.title,
      state: 'running',
      steps: [],
      startedAt: Date.now(),
    };
    const publish = (r: ActionRun): void => {
      run = r;
      this.current = r;
      const i = this.history.findIndex((h) => h.id === r.id);
      if (i >= 0) this.history[i] = r;
      else this.history.push(r);
      if (this.history.length > 50) this.history.shift();
      this.o.onRun(r);
    };
    publish(run);
    for (const command of ex.commands) {
      publish({ ...run, steps: [...run.steps, { command }] });
      const r = await this.o.runner.run('sh', ['-c', command], {
        env: { KUBECONFIG: this.o.kubeconfig },
        timeoutMs: 180_000,
      });
      const step: StepResult = { command, code: r.code, output: clip(`${r.stdout}${r.stderr}`.trimEnd()) };
      publish({ ...run, steps: [...run.steps.slice(0, -1), step] });
      if (r.code !== 0) {
        publish({ ...run, state: 'failed', endedAt: Date.now() });
        return run;
      }
    }
    publish({ ...run, state: 'ok', endedAt: Date.now() });
    return run;
  }

  /** `kube-proxy-ts explain service NAME -n NS -o json` against the lab, every node. */
  async explain(namespace: string, name: string): Promise<unknown> {
    const args = [
      'explain',
      'service',
      name,
      '-n',
      namespace,
      '--kubeconfig',
      this.o.kubeconfig,
      '--config',
      this.o.nodeConfig,
      '-o',
      'json',
    ];
    return {
      command: shellLine(['kube-proxy-ts', ...args], this.o.stateDir),
      result: await this.cliJson(agentCliArgv(args)),
    };
  }

  /** `kube-proxy-ts lab trace FROM TO -o json`: the request and each node's path. */
  async trace(from: string, to: string): Promise<unknown> {
    const args = ['lab', 'trace', from, to, '--timeout', '15', '-o', 'json', '--state-dir', this.o.stateDir];
    return {
      command: shellLine(['kube-proxy-ts', ...args], this.o.stateDir),
      result: await this.cliJson(labCliArgv(args.slice(1))),
    };
  }

  private async cliJson(argv: readonly string[]): Promise<unknown> {
    const [cmd = 'node', ...rest] = argv;
    const r = await this.o.runner.run(cmd, rest, { timeoutMs: 60_000 });
    if (r.code !== 0) throw new ActionError((r.stderr || r.stdout).trim() || `exit ${r.code}`, 400);
    try {
      return JSON.parse(r.stdout) as unknown;
    } catch {
      throw new ActionError(`unreadable output: ${r.stdout.slice(0, 200)}`, 500);
    }
  }
}

/**
 * argv as one shell line, quoted where needed (what the page shows the user to type). Paths under the lab's state
 * directory read "$LAB/…", as the walkthrough writes them.
 */
export function shellLine(argv: readonly string[], stateDir?: string): string {
  return argv
    .map((a) => {
      if (stateDir !== undefined && (a === stateDir || a.startsWith(`${stateDir}/`)))
        return `"$LAB${a.slice(stateDir.length)}"`;
      return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
    })
    .join(' ');
}

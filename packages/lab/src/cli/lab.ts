// `kube-proxy-ts lab …`: the one-host cluster.
import { processOutput, runCommand, UsageError } from 'kube-proxy-ts/cli/command-line.js';
import { readChoice } from 'kube-proxy-ts/config/choice.js';
import { DEFAULT_NFTABLES_LAYOUT, NFTABLES_LAYOUTS } from 'kube-proxy-ts/config/nftables-layout.js';
import { PROXY_MODES } from 'kube-proxy-ts/config/proxy-mode.js';
import { parseArgs } from 'node:util';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { stderrLogger } from 'kube-proxy-ts/cli/logging.js';
import { SIGNAL_EXIT, stopRequests, type StopReason } from './stop-requests.js';
import {
  API_OUTAGE_MS,
  LabAlreadyUpError,
  defaultStateDir,
  formatStatus,
  labDown,
  labStatus,
  parseHostPort,
  readLabState,
  resolveTarget,
  startLab,
  startRelay,
} from '../cluster/index.js';
import { DEFAULT_IP_FAMILY, LAB_IP_FAMILIES, labPaths, type LabIPFamily } from '../cluster/layout.js';
import { layoutOf } from '../cluster/state.js';
import { WatchView } from '../cluster/watch-view.js';
import { IPTABLES_BACKENDS, nodeEnvironment } from '../cluster/node-env.js';
import { labApiserverCommand } from './lab-apiserver.js';
import { stateDirArg } from './state-dir-arg.js';
import { shellQuote } from '../cluster/streams.js';
import { join, resolve } from 'node:path';
import { existsSync, rmSync, writeFileSync } from 'node:fs';

export const LAB_USAGE = `Usage: kube-proxy-ts lab COMMAND

Commands:
  up [--nodes 2] [--mode nftables|iptables|ipvs] [--nftables-layout upstream|flat] [--iptables legacy|nft]
     [--ip-family ipv4|ipv6|dual] [--zones zone-a,zone-b] [--control-plane-taint] [--follow-configmap]
     [--image FILE] [--vm-nodes N] [--time-scale N]
            start a cluster on this host (needs root): nodes and pods as network namespaces,
            kube-proxy-ts as the pods of DaemonSet kube-system/kube-proxy, Service svc/web; runs in the
            foreground, Ctrl-C removes everything.
            --ip-family: IPv4 only (default), IPv6 only, or dual-stack with IPv4 primary: node, pod
            and Service addresses of each family (2001:db8::/32 for IPv6), proxies for each
            --zones: label the nodes with topology.kubernetes.io/zone, round robin
            --control-plane-taint: taint the control-plane node node-role.kubernetes.io/control-plane:
            NoSchedule, as kubeadm and kind do on a cluster with workers: Pods that do not tolerate it
            (svc/web) run on the workers only; kube-proxy and CoreDNS still run there (needs --nodes 2+)
            --mode ipvs: deprecated upstream (KubeProxyIPVS); needs a kernel with IP_VS, which the
            proxies refuse to start without, naming the missing modules (scripts/soak-remedies.sh
            --in-guest runs a lab in a guest on Debian's kernel, which has it)
            --follow-configmap: a kube-proxy ConfigMap edit restarts the proxies at once (default: as on a
            real cluster, \`kubectl -n kube-system rollout restart ds kube-proxy\` applies it)
            --nftables-layout flat: every proxy programs the flat ruleset (shared maps, no chain per
            Service; see docs/nftables-layouts.md)
            --iptables legacy|nft: the iptables back end the proxies run (default: the host's); legacy
            is the one that serialises writers on the xtables lock (each node has its own lock file)
            --image FILE: run each node's kube-proxy from the node image (the OCI archive that
            scripts/image.sh writes) with runc, as a node's runtime would (needs runc and umoci)
            --vm-nodes N: the last N nodes are QEMU guests on Debian's kernel (its own conntrack,
            IPVS; kubectl get nodes -o wide shows it), tainted kube-proxy-ts.lab/vm-node so that only
            what tolerates it runs there; IPv4 only; each guest takes 10-60 s to boot and its proxy
            minutes to sync under emulation (needs qemu-system-x86)
            --time-scale N: stretch the lab's waits and probe periods N times, for a slow or emulated
            host (a whole lab inside a QEMU guest: scripts/soak-remedies.sh --in-guest uses 5)
  down      stop the lab (also after it crashed) and remove every namespace, link and process it made
  status    nodes, proxies (pid, mode, last sync) and pods
  watch [--rounds N]
            every node's proxy counters (endpoint/service changes pending and total, syncs, last sync
            duration) redrawn each second, with a sparkline of pending changes per node
  exec TARGET -- CMD [ARGS…]
            run a command inside a node (control-plane, worker, …), "client", or a pod (NAME or NS/NAME);
            without a command, print the target's network namespace (for an interactive shell:
            ip netns exec "$(kube-proxy-ts lab exec worker)" bash)
  trace FROM TO [--timeout S] [-o text|json]
            follow one request from a pod or "client" to web.svc, web.svc:80, http://web.svc/, IP:PORT or
            NODE:NODEPORT through every node's rules (see lab trace --help)
  soak [--duration 60s] [--services N] [--churn PER_SECOND] [--rate REQ_PER_SECOND]
       [--competing-lock-holder] [--restart-proxy-every D] [--apiserver-outage-every D] [-o text|json]
            sustained churn with traffic flowing, faults on request, and a report of failed requests
            by kind, network programming latency, connections surviving proxy restarts, stale UDP
            conntrack entries (see lab soak --help)
  web       print the URL of the lab's web view (live cluster, proxy counters, rulesets, explain,
            trace, experiments; 127.0.0.1 only, the URL carries its token)
  kubeconfig
            print the path of the lab's kubeconfig (export KUBECONFIG=$(kube-proxy-ts lab kubeconfig))
  apiserver [--listen 127.0.0.1:PORT] [--kubeconfig-out PATH] [--nodes N]
            run just the embedded API server and its controllers, in the foreground
  apiserver-restart
            restart the running lab's API server in place: every connection and watch (kubectl's, the
            proxies') is cut and refused for 3 s, then the same objects are served again and clients
            re-list or re-watch, as after a kube-apiserver restart

Every command takes --state-dir DIR (default ${defaultStateDir()}).
`;

function fail(message: string, code = 2): number {
  process.stderr.write(`lab: ${message}\n`);
  return code;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

async function upCommand(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        nodes: { type: 'string' },
        mode: { type: 'string' },
        'nftables-layout': { type: 'string' },
        iptables: { type: 'string' },
        'ip-family': { type: 'string' },
        zones: { type: 'string' },
        'control-plane-taint': { type: 'boolean' },
        'follow-configmap': { type: 'boolean' },
        image: { type: 'string' },
        'vm-nodes': { type: 'string' },
        'time-scale': { type: 'string' },
        'state-dir': { type: 'string' },
        // Undocumented: tests run a lab beside a user's own under another prefix.
        prefix: { type: 'string' },
      },
      strict: true,
    }));
  } catch (e) {
    return fail(`up: ${e instanceof Error ? e.message : String(e)}`);
  }
  const nodes = Number(values.nodes ?? '2');
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 6)
    return fail(`up: --nodes ${values.nodes ?? ''}: expected 1…6`);
  const controlPlaneTaint = values['control-plane-taint'] === true;
  if (controlPlaneTaint && nodes < 2)
    return fail(
      'up: --control-plane-taint: needs --nodes 2 or more (Pods that do not tolerate it could go nowhere)',
    );
  const modeRead = readChoice('mode', PROXY_MODES, values.mode, 'nftables');
  if (!modeRead.ok) return fail(`up: --mode: ${modeRead.message}`);
  const mode = modeRead.value;
  const layout = readChoice('layout', NFTABLES_LAYOUTS, values['nftables-layout'], DEFAULT_NFTABLES_LAYOUT);
  if (!layout.ok) return fail(`up: --nftables-layout: ${layout.message}`);
  const nftablesLayout = values['nftables-layout'] !== undefined ? layout.value : undefined;
  if (nftablesLayout !== undefined && mode !== 'nftables')
    return fail('up: --nftables-layout: only with --mode nftables');
  const backend = readChoice('iptables backend', IPTABLES_BACKENDS, values.iptables, 'legacy');
  if (!backend.ok) return fail(`up: --iptables: ${backend.message}`);
  const iptables = values.iptables !== undefined ? backend.value : undefined;
  if (iptables !== undefined && mode !== 'iptables') return fail('up: --iptables: only with --mode iptables');
  const family = readChoice('IP family', LAB_IP_FAMILIES, values['ip-family'], DEFAULT_IP_FAMILY);
  if (!family.ok) return fail(`up: --ip-family: ${family.message}`);
  const ipFamily = family.value;
  const zones = values.zones === undefined ? [] : values.zones.split(',').map((z) => z.trim());
  const badZone = zones.find((z) => !/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(z));
  if (badZone !== undefined)
    return fail(`up: --zones: ${JSON.stringify(badZone)} is not a label value (letters, digits, - _ .)`);
  const vmNodes = Number(values['vm-nodes'] ?? '0');
  if (!Number.isInteger(vmNodes) || vmNodes < 0 || vmNodes >= nodes)
    return fail(
      `up: --vm-nodes ${values['vm-nodes'] ?? ''}: expected 0…${nodes - 1} (the control-plane node stays a namespace)`,
    );
  if (vmNodes > 0 && ipFamily !== 'ipv4') return fail('up: --vm-nodes: guest nodes are IPv4 only for now');
  if (vmNodes > 0 && values.image !== undefined)
    return fail('up: --vm-nodes and --image: the node image runs by runc on this host, not in a guest');
  const timeScale = Number(values['time-scale'] ?? '1');
  if (!Number.isFinite(timeScale) || timeScale < 1 || timeScale > 100)
    return fail(`up: --time-scale ${values['time-scale'] ?? ''}: expected a number from 1 to 100`);
  if (!isRoot()) return fail('up: the lab creates network namespaces and needs root (try sudo)', 1);
  const image = values.image === undefined ? undefined : resolve(values.image);
  const stateDir = values['state-dir'] ?? defaultStateDir();
  const started = Date.now();
  const progress = (line: string): void =>
    void process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${line}\n`);
  // Listening for Ctrl-C (and the rest) from here on: a lab stopped while it comes up removes what it built.
  const stop = stopRequests((line) => progress(line));
  const starting = new AbortController();
  void stop.requested.then((reason) => starting.abort(new LabStartStopped(reason)));
  let lab;
  try {
    lab = await startLab({
      nodes,
      mode,
      ...(nftablesLayout !== undefined ? { nftablesLayout } : {}),
      ...(iptables !== undefined ? { iptables } : {}),
      ipFamily,
      ...(zones.length > 0 ? { zones } : {}),
      ...(controlPlaneTaint ? { controlPlaneTaint } : {}),
      ...(values['follow-configmap'] === true ? { followConfigMap: true } : {}),
      ...(image !== undefined ? { image } : {}),
      ...(vmNodes > 0 ? { vmNodes } : {}),
      ...(timeScale !== 1 ? { timeScale } : {}),
      stateDir,
      ...(values.prefix !== undefined ? { prefix: values.prefix } : {}),
      progress,
      logger: stderrLogger({ component: 'lab' }),
      signal: starting.signal,
    });
  } catch (e) {
    stop.release();
    if (e instanceof LabStartStopped) return fail(e.message, SIGNAL_EXIT[e.reason]);
    if (e instanceof LabAlreadyUpError) return fail(e.message, 1);
    return fail(`up failed: ${e instanceof Error ? e.message : String(e)}`, 1);
  }
  const running = lab;
  // A lab with its own state directory prints commands that name it, so that each runs as printed.
  const stateFlag = stateDir === defaultStateDir() ? '' : ` --state-dir ${shellQuote(stateDir)}`;
  const labCli = (verb: string): string => `kube-proxy-ts lab ${verb}${stateFlag}`;
  process.stdout.write(`
The lab is up: ${running.nodes.length} nodes${FAMILY_WORDS[ipFamily]}, kube-proxy-ts in ${mode} mode${nftablesLayout === 'flat' ? ' (flat layout)' : ''} on each${image !== undefined ? `, from the image ${image}` : ''}.

  export KUBECONFIG=${running.kubeconfigPath}
  kubectl get nodes,pods -A -o wide
  kubectl -n svc get svc,endpointslices
  kubectl -n kube-system get ds kube-proxy
  kubectl -n kube-system logs -l k8s-app=kube-proxy --tail=5
  kubectl -n svc exec $(kubectl -n svc get pods -o name | head -1 | cut -d/ -f2) -- curl -s http://web.svc/hostname
  ${labCli('exec')} ${running.nodes.at(-1)?.name ?? 'worker'} -- nft list table ${ipFamily === 'ipv6' ? 'ip6' : 'ip'} kube-proxy
  ${labCli('status')}

Proxy logs: kubectl -n kube-system logs -l k8s-app=kube-proxy (files: ${labPaths(stateDir).nodeDir('NODE')}/kube-proxy.log)
Ctrl-C (or \`${labCli('down')}\`) removes everything. Walkthrough: docs/lab-walkthrough.md
`);
  // SIGUSR2 from another process: `lab apiserver-restart` (which wrote its request file first) asks for a restart
  // every client sees; `lab soak --apiserver-outage-every D` for an outage of the nodes' connections.
  const restartRequest = labPaths(stateDir).apiserverRestartRequest;
  const onOutage = (): void => {
    if (!existsSync(restartRequest)) return running.apiServerOutage(API_OUTAGE_MS);
    void running.apiServerRestart(API_OUTAGE_MS).finally(() => rmSync(restartRequest, { force: true }));
  };
  process.on('SIGUSR2', onOutage);
  await Promise.race([stop.requested, running.stopped]);
  process.off('SIGUSR2', onOutage);
  await running.stop();
  stop.release();
  return 0;
}

/** How `lab up` says which families the lab has (nothing for the default). */
const FAMILY_WORDS: Readonly<Record<LabIPFamily, string>> = {
  ipv4: '',
  ipv6: ', IPv6 only',
  dual: ', dual-stack (IPv4 primary)',
};

/** `lab up` asked to stop before the lab was up. */
class LabStartStopped extends Error {
  constructor(readonly reason: StopReason) {
    super(`up: stopped (${reason}) before the lab was up; what was built is removed`);
  }
}

async function downCommand(argv: string[]): Promise<number> {
  const parsed = stateDirArg(argv, defaultStateDir());
  if (typeof parsed === 'string') return fail(`down: ${parsed}`);
  if (parsed.rest.length > 0) return fail(`down: unexpected ${parsed.rest.join(' ')}`);
  if (!isRoot()) return fail('down: needs root, as `lab up` did', 1);
  const report = await labDown(parsed.stateDir, { progress: (l) => void process.stdout.write(`${l}\n`) });
  for (const e of report.errors) process.stderr.write(`lab down: ${e}\n`);
  process.stdout.write(report.errors.length === 0 ? 'the lab is down; nothing is left behind\n' : '');
  return report.errors.length === 0 ? 0 : 1;
}

async function statusCommand(argv: string[]): Promise<number> {
  const parsed = stateDirArg(argv, defaultStateDir());
  if (typeof parsed === 'string') return fail(`status: ${parsed}`);
  const s = await labStatus(parsed.stateDir);
  if (typeof s === 'string') {
    process.stdout.write(`${s}\n`);
    return 1;
  }
  process.stdout.write(formatStatus(s));
  return 0;
}

/** `lab apiserver-restart`: asks the running lab (its request file, then SIGUSR2) and waits until it serves again. */
async function apiserverRestartCommand(argv: string[]): Promise<number> {
  const parsed = stateDirArg(argv, defaultStateDir());
  if (typeof parsed === 'string') return fail(`apiserver-restart: ${parsed}`);
  if (parsed.rest.length > 0) return fail(`apiserver-restart: unexpected ${parsed.rest.join(' ')}`);
  const paths = labPaths(parsed.stateDir);
  const read = readLabState(paths.stateFile);
  if (!read.ok)
    return fail(read.missing ? 'apiserver-restart: no lab is up' : `apiserver-restart: ${read.reason}`, 1);
  writeFileSync(paths.apiserverRestartRequest, `${process.pid}\n`);
  try {
    process.kill(read.state.pid, 'SIGUSR2');
  } catch (e) {
    rmSync(paths.apiserverRestartRequest, { force: true });
    return fail(
      `apiserver-restart: the lab process ${read.state.pid} is gone (${String(e)}); lab down cleans up`,
      1,
    );
  }
  process.stdout.write(`API server restarting: connections cut and refused for ${API_OUTAGE_MS / 1000} s\n`);
  // The lab removes the request once it listens again: a file's disappearance, polled at its own pace.
  const deadline = Date.now() + API_OUTAGE_MS + 30_000;
  while (existsSync(paths.apiserverRestartRequest)) {
    if (Date.now() > deadline) return fail('apiserver-restart: the lab did not come back within 30 s', 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  process.stdout.write('API server serving again (same objects; clients re-list or re-watch)\n');
  return 0;
}

async function execCommand(argv: string[]): Promise<number> {
  const parsed = stateDirArg(argv, defaultStateDir());
  if (typeof parsed === 'string') return fail(`exec: ${parsed}`);
  const [target, ...after] = parsed.rest;
  if (target === undefined || target === '--') return fail('exec: usage: lab exec TARGET -- CMD [ARGS…]');
  const cmd = after[0] === '--' ? after.slice(1) : after;
  const read = readLabState(labPaths(parsed.stateDir).stateFile);
  if (!read.ok) return fail(read.missing ? 'exec: no lab is up' : `exec: ${read.reason}`, 1);
  // A guest node's namespace is the guest's: the control channel belongs to the `lab up` process.
  if (existsSync(join(labPaths(parsed.stateDir).guestsDir, target)))
    return fail(
      `exec: ${target} is a guest node (lab up --vm-nodes): lab exec does not reach into guests yet`,
      1,
    );
  const found = await resolveTarget(hostCommandRunner, read.state, target);
  if (!found.ok) return fail(`exec: ${found.reason}`, 1);
  if (cmd.length === 0) {
    process.stdout.write(`${found.namespace}\n`);
    return 0;
  }
  // Output is relayed when the command ends (the CommandRunner seam collects it): fine for curl, nft, ip;
  // for an interactive shell use `ip netns exec` with the namespace printed above.
  // On a node, a command sees the node as its host: its xtables lock and iptables back end (node-env.ts).
  const paths = labPaths(parsed.stateDir);
  const node = read.state.nodes.find((n) => n === target);
  const env =
    node === undefined
      ? undefined
      : nodeEnvironment(paths, node, read.state.iptables, process.env.PATH ?? '');
  const r = await hostCommandRunner.run('ip', ['netns', 'exec', found.namespace, ...cmd], env ? { env } : {});
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  return r.code;
}

async function watchCommand(argv: string[]): Promise<number> {
  const parsed = stateDirArg(argv, defaultStateDir());
  if (typeof parsed === 'string') return fail(`watch: ${parsed}`);
  const rounds = parsed.rest[0] === '--rounds' ? Number(parsed.rest[1]) : undefined;
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0))
    return fail('watch: --rounds N: a positive count');
  const read = readLabState(labPaths(parsed.stateDir).stateFile);
  if (!read.ok) return fail(read.missing ? 'watch: no lab is up' : `watch: ${read.reason}`, 1);
  const view = new WatchView(layoutOf(read.state).nodes);
  // On a terminal the screen is redrawn in place; piped (or with --rounds), each round is printed after the last.
  const redraw = process.stdout.isTTY && rounds === undefined;
  let stop = false;
  const onSignal = (): void => void (stop = true);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  for (let i = 0; !stop && (rounds === undefined || i < rounds); i++) {
    const started = Date.now();
    await view.poll(hostCommandRunner);
    process.stdout.write(`${redraw ? '\x1b[H\x1b[2J' : ''}${view.render()}`);
    const wait = 1000 - (Date.now() - started);
    if (!stop && (rounds === undefined || i + 1 < rounds))
      await new Promise((r) => setTimeout(r, Math.max(0, wait)));
  }
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  return 0;
}

async function kubeconfigCommand(argv: string[]): Promise<number> {
  const parsed = stateDirArg(argv, defaultStateDir());
  if (typeof parsed === 'string') return fail(`kubeconfig: ${parsed}`);
  const read = readLabState(labPaths(parsed.stateDir).stateFile);
  if (!read.ok) return fail(read.missing ? 'kubeconfig: no lab is up' : `kubeconfig: ${read.reason}`, 1);
  process.stdout.write(`${labPaths(parsed.stateDir).kubeconfig}\n`);
  return 0;
}

/** Internal: the soak's load generator, inside a lab namespace (see src/lab/soak/load-generator.ts). */
const LOAD_LINE = {
  name: 'lab load',
  usage: 'Usage: kube-proxy-ts lab load --config FILE --out FILE (internal: the soak starts it)\n',
  options: { config: { type: 'string' }, out: { type: 'string' } },
} as const;

/** Internal: runs inside a node namespace, started by the lab (see src/lab/cluster/relay.ts). */
const RELAY_LINE = {
  name: 'lab relay',
  usage:
    'Usage: kube-proxy-ts lab relay --listen HOST:PORT (--socket PATH | --connect HOST:PORT)\n' +
    '(internal: the lab starts it)\n',
  options: { listen: { type: 'string' }, socket: { type: 'string' }, connect: { type: 'string' } },
} as const;

function loadCommand(argv: string[]): Promise<number> {
  return runCommand(LOAD_LINE, argv, processOutput, async ({ values }) => {
    if (!values.config || !values.out) throw new UsageError('--config and --out are required');
    const { loadMain } = await import('../soak/load-generator.js');
    return loadMain(values.config, values.out);
  });
}

/** Internal: the coredns pods' container (see src/lab/dns/cluster-dns-server.ts and cluster/cluster-dns.ts). */
const DNS_SERVER_LINE = {
  name: 'lab dns-server',
  usage:
    'Usage: kube-proxy-ts lab dns-server --kubeconfig FILE [--apiserver-socket PATH] [--port 53]\n' +
    '(internal: the coredns pods of kube-system run it)\n',
  options: {
    kubeconfig: { type: 'string' },
    'apiserver-socket': { type: 'string' },
    port: { type: 'string' },
  },
} as const;

function dnsServerCommand(argv: string[]): Promise<number> {
  return runCommand(DNS_SERVER_LINE, argv, processOutput, async ({ values }) => {
    if (!values.kubeconfig) throw new UsageError('--kubeconfig is required');
    const port = Number(values.port ?? '53');
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port: expected 0…65535');
    const { startClusterDns } = await import('../dns/cluster-dns-server.js');
    const dns = await startClusterDns({
      kubeconfig: values.kubeconfig,
      ...(values['apiserver-socket'] !== undefined ? { apiserverSocket: values['apiserver-socket'] } : {}),
      port,
      logger: stderrLogger({ component: 'dns' }),
    });
    process.stderr.write(`dns-server: answering on port ${dns.port} (UDP and TCP)\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    await dns.close();
    return 0;
  });
}

function relayCommand(argv: string[]): Promise<number> {
  return runCommand(RELAY_LINE, argv, processOutput, ({ values }) => relay(values));
}

async function relay(values: { listen?: string; socket?: string; connect?: string }): Promise<number> {
  const listen = parseHostPort(values.listen ?? '');
  if (!listen) throw new UsageError('--listen HOST:PORT is required');
  if ((values.socket === undefined) === (values.connect === undefined))
    throw new UsageError('one of --socket PATH and --connect HOST:PORT is required');
  const connectTo = values.connect === undefined ? undefined : parseHostPort(values.connect);
  if (values.connect !== undefined && !connectTo)
    throw new UsageError(`--connect: expected HOST:PORT, got ${JSON.stringify(values.connect)}`);
  const target = connectTo ?? (values.socket as string);
  const pipe = await startRelay(listen, target);
  process.stderr.write(`relay: ${values.listen ?? ''} → ${values.connect ?? values.socket ?? ''}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await pipe.close();
  return 0;
}

/**
 * The lab's commands by name, each given the words after it. trace, soak and web are imported only when run,
 * so the other commands start without loading them.
 */
const LAB_COMMANDS: Readonly<Record<string, (argv: string[]) => Promise<number> | number>> = {
  up: upCommand,
  down: downCommand,
  status: statusCommand,
  exec: execCommand,
  kubeconfig: kubeconfigCommand,
  watch: watchCommand,
  trace: async (argv) => (await import('./lab-trace.js')).labTraceCommand(argv, defaultStateDir()),
  soak: async (argv) => (await import('./lab-soak.js')).labSoakCommand(argv, defaultStateDir()),
  load: loadCommand,
  web: async (argv) => (await import('./lab-web.js')).labWebCommand(argv, defaultStateDir()),
  relay: relayCommand,
  'dns-server': dnsServerCommand,
  apiserver: labApiserverCommand,
  'apiserver-restart': apiserverRestartCommand,
};

export async function labCommand(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    process.stdout.write(LAB_USAGE);
    return sub === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(LAB_COMMANDS, sub) ? LAB_COMMANDS[sub] : undefined;
  if (command === undefined) {
    process.stderr.write(`lab: unknown command ${JSON.stringify(sub)}\n\n${LAB_USAGE}`);
    return 2;
  }
  return command(rest);
}

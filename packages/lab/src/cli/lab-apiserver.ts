// `kube-proxy-ts lab apiserver`: the lab's API server and controllers in the foreground, with N nodes, until
// SIGINT/SIGTERM. Also runnable on its own: node --import tsx src/cli/lab-apiserver.ts --nodes 2
import { pathToFileURL } from 'node:url';
import { defaultNodes, startApiServer } from '../apiserver/index.js';
import { readyPodLifecycle } from '../controllers/pod-lifecycle.js';
import { stderrLogger } from 'kube-proxy-ts/cli/logging.js';
import { processOutput, runCommand, UsageError } from 'kube-proxy-ts/cli/command-line.js';
import type { ParsedCommandLine } from 'kube-proxy-ts/cli/command-line.js';
import { stopRequests } from './stop-requests.js';

const USAGE = `usage: kube-proxy-ts lab apiserver [--listen 127.0.0.1:PORT] [--kubeconfig-out PATH] [--nodes N]
                                  [--service-cidr CIDR] [--max-endpoints-per-slice N]
                                  [--pod-termination-delay-ms MS]
`;

function positiveInt(name: string, text: string | undefined, fallback: number, min = 1): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (Number.isInteger(n) && n >= min) return n;
  throw new UsageError(`--${name}: expected an integer >= ${min}, got "${text}"`);
}

const LAB_APISERVER_LINE = {
  name: 'lab apiserver',
  usage: USAGE,
  options: {
    listen: { type: 'string' },
    'kubeconfig-out': { type: 'string' },
    nodes: { type: 'string' },
    'service-cidr': { type: 'string' },
    'max-endpoints-per-slice': { type: 'string' },
    'pod-termination-delay-ms': { type: 'string' },
  },
} as const;

export async function labApiserverCommand(argv: string[]): Promise<number> {
  return runCommand(LAB_APISERVER_LINE, argv, processOutput, ({ values }) => labApiserver(values));
}

async function labApiserver(
  values: ParsedCommandLine<typeof LAB_APISERVER_LINE.options>['values'],
): Promise<number> {
  const nodes = positiveInt('nodes', values.nodes, 1);
  const maxPerSlice = positiveInt('max-endpoints-per-slice', values['max-endpoints-per-slice'], 100);
  const delay = positiveInt('pod-termination-delay-ms', values['pod-termination-delay-ms'], 0, 0);
  const logger = stderrLogger({ component: 'lab-apiserver' });
  let server;
  try {
    server = await startApiServer({
      ...(values.listen ? { listen: values.listen } : {}),
      nodes: defaultNodes(nodes),
      ...(values['service-cidr'] ? { serviceCIDR: values['service-cidr'] } : {}),
      maxEndpointsPerSlice: maxPerSlice,
      podLifecycle: readyPodLifecycle({ terminationDelayMs: delay }),
      ...(values['kubeconfig-out'] ? { kubeconfigPath: values['kubeconfig-out'] } : {}),
      logger,
    });
  } catch (e) {
    process.stderr.write(`lab apiserver: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  process.stdout.write(
    `${JSON.stringify({ url: server.url, kubeconfig: server.kubeconfigPath ?? null, nodes })}\n`,
  );
  const running = server;
  const stop = stopRequests();
  await stop.requested;
  await running.stop();
  stop.release();
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  labApiserverCommand(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`${String(e)}\n`);
      process.exit(1);
    },
  );
}

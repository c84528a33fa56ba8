// `kube-proxy-ts lab apiserver`: the lab's API server and controllers in the foreground, with N nodes, until
// SIGINT/SIGTERM. Also runnable on its own: node --import tsx src/cli/lab-apiserver.ts --nodes 2
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { defaultNodes, startApiServer } from '../apiserver/index.js';
import { readyPodLifecycle } from '../controllers/pod-lifecycle.js';
import { stderrLogger } from 'kube-proxy-ts/cli/logging.js';
import { stopRequests } from './stop-requests.js';

const USAGE = `usage: kube-proxy-ts lab apiserver [--listen 127.0.0.1:PORT] [--kubeconfig-out PATH] [--nodes N]
                                  [--service-cidr CIDR] [--max-endpoints-per-slice N]
                                  [--pod-termination-delay-ms MS]`;

function positiveInt(name: string, text: string | undefined, fallback: number, min = 1): number | string {
  if (text === undefined) return fallback;
  const n = Number(text);
  return Number.isInteger(n) && n >= min ? n : `--${name}: expected an integer >= ${min}, got "${text}"`;
}

export async function labApiserverCommand(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        listen: { type: 'string' },
        'kubeconfig-out': { type: 'string' },
        nodes: { type: 'string' },
        'service-cidr': { type: 'string' },
        'max-endpoints-per-slice': { type: 'string' },
        'pod-termination-delay-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const nodes = positiveInt('nodes', values.nodes, 1);
  const maxPerSlice = positiveInt('max-endpoints-per-slice', values['max-endpoints-per-slice'], 100);
  const delay = positiveInt('pod-termination-delay-ms', values['pod-termination-delay-ms'], 0, 0);
  for (const v of [nodes, maxPerSlice, delay])
    if (typeof v === 'string') {
      process.stderr.write(`${v}\n${USAGE}\n`);
      return 2;
    }
  const logger = stderrLogger({ component: 'lab-apiserver' });
  let server;
  try {
    server = await startApiServer({
      ...(values.listen ? { listen: values.listen } : {}),
      nodes: defaultNodes(Number(nodes)),
      ...(values['service-cidr'] ? { serviceCIDR: values['service-cidr'] } : {}),
      maxEndpointsPerSlice: Number(maxPerSlice),
      podLifecycle: readyPodLifecycle({ terminationDelayMs: Number(delay) }),
      ...(values['kubeconfig-out'] ? { kubeconfigPath: values['kubeconfig-out'] } : {}),
      logger,
    });
  } catch (e) {
    process.stderr.write(`lab apiserver: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  process.stdout.write(
    `${JSON.stringify({ url: server.url, kubeconfig: server.kubeconfigPath ?? null, nodes: Number(nodes) })}\n`,
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

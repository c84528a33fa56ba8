// The datapath bench's client (bench/datapath.ts starts it inside the client namespace with `ip netns exec`): reads
// `{ targets, port, warmup }` as JSON on stdin and opens one new TCP connection after another, to target i in
// turn. Each connection is timed from net.connect() to its 'connect' event (SYN out → SYN-ACK back, through the
// node's rules, plus this process's own wake-up, the same in every row) and then reset: the server
// (bench/datapath-server.ts) has no part in the timing, and no TIME_WAIT piles up. The first `warmup` targets are
// dialled untimed (the JIT, the neighbour caches). Prints `{ connectUs, elapsedMs }` as JSON.
import { connect } from 'node:net';
import type { ConnectRun } from './datapath-plan.js';

interface ClientSpec {
  readonly targets: readonly string[];
  readonly port: number;
  readonly warmup: number;
}

/** One connection: resolves with its connect time in µs once it is established (and then reset). */
function connectOnce(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const socket = connect({ host, port });
    socket.once('connect', () => {
      const us = Number(process.hrtime.bigint() - t0) / 1000;
      socket.resetAndDestroy();
      resolve(us);
    });
    socket.once('error', (e) => reject(new Error(`connect ${host}:${port}: ${e.message}`)));
  });
}

async function run(spec: ClientSpec): Promise<ConnectRun> {
  for (let i = 0; i < spec.warmup; i++)
    await connectOnce(spec.targets[i % spec.targets.length] ?? '', spec.port);
  const connectUs: number[] = [];
  const t0 = performance.now();
  for (const host of spec.targets) connectUs.push(await connectOnce(host, spec.port));
  return { connectUs, elapsedMs: performance.now() - t0 };
}

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk as string;
process.stdout.write(JSON.stringify(await run(JSON.parse(input) as ClientSpec)) + '\n');

// The datapath bench's backend pod (bench/datapath.ts starts it in each pod namespace): accepts TCP connections on
// the given port, on every address the namespace owns, and drops them. Its accept queue is long (the namespace's
// net.core.somaxconn is raised to match), so a client that resets each connection right after the handshake never
// finds the queue full while this process waits for a CPU on a busy host: the handshake is the kernel's alone, and
// no SYN is dropped and retried a second later. Writes `ready` to stdout once it listens.
import { createServer } from 'node:net';
import { DATAPATH_BACKLOG } from './datapath-plan.js';

const port = Number(process.argv[2]);
const server = createServer((socket) => socket.destroy());
server.on('error', (e) => {
  process.stderr.write(`datapath server: ${e.message}\n`);
  process.exit(1);
});
server.listen({ port, host: '0.0.0.0', backlog: DATAPATH_BACKLOG }, () => process.stdout.write('ready\n'));

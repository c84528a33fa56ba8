// The lab's agnhost: `node main.ts SUBCOMMAND [flags]`, what an agnhost container runs in a lab pod (see
// subcommands.ts for which). Each subcommand is its own file; this one reads argv, starts it, and turns signals
// and failures into the exit codes and messages agnhost gives.
import { pathToFileURL } from 'node:url';
import { logLine, podHostname } from './common.js';
import { runConnect } from './connect.js';
import { parseNetexecArgs, startNetexec } from './netexec.js';
import { runPause } from './pause.js';
import { parsePorterArgs, porterEntries, startPorter } from './porter.js';
import { parseServeHostnameArgs, startServeHostname } from './serve-hostname.js';
import { isAgnhostSubcommand, isImplementedSubcommand, IMPLEMENTED_SUBCOMMANDS } from './subcommands.js';

/** serve-hostname keeps answering this long after SIGTERM, "awaiting pod deletion" as agnhost does. */
const SERVE_HOSTNAME_LINGER_MS = 60_000;

function fatal(message: string, code = 1): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

async function run(argv: readonly string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const hostname = podHostname();
  if (!isImplementedSubcommand(sub)) {
    if (isAgnhostSubcommand(sub))
      fatal(`agnhost ${sub}: not implemented in the lab (it has ${IMPLEMENTED_SUBCOMMANDS.join(', ')})`);
    fatal(`Error: unknown command ${JSON.stringify(sub ?? '')} for "agnhost"`);
  }
  switch (sub) {
    case 'netexec': {
      const netexec = await startNetexec(parseNetexecArgs(rest, hostname));
      process.once('SIGTERM', () => netexec.terminate());
      return;
    }
    case 'serve-hostname': {
      const server = await startServeHostname(parseServeHostnameArgs(rest, hostname));
      process.once('SIGTERM', () => {
        logLine('Shutting down after receiving signal: terminated.');
        logLine('Awaiting pod deletion.');
        setTimeout(() => {
          server.close();
          process.exit(0);
        }, SERVE_HOSTNAME_LINGER_MS);
      });
      return;
    }
    case 'porter': {
      const entries = porterEntries(process.env);
      await startPorter(entries, parsePorterArgs(rest));
      // agnhost's porter blocks forever even with nothing to serve.
      setInterval(() => undefined, 1 << 30);
      return;
    }
    case 'connect': {
      const result = await runConnect(rest);
      process.stderr.write(result.message);
      process.exit(result.code);
      return;
    }
    case 'pause':
      return runPause(rest);
  }
}

const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(invokedAs).href) {
  run(process.argv.slice(2)).catch((e: unknown) =>
    fatal(`Error: ${e instanceof Error ? e.message : String(e)}`),
  );
}

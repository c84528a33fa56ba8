// `kube-proxy-ts lab …`: the one-host cluster.
import { labApiserverCommand } from './lab-apiserver.js';

export const LAB_USAGE = `Usage: kube-proxy-ts lab COMMAND

Commands:
  apiserver [--listen 127.0.0.1:PORT] [--kubeconfig-out PATH] [--nodes N]
            run just the embedded API server and its controllers, in the foreground
`;

export async function labCommand(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'apiserver':
      return labApiserverCommand([...rest]);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(LAB_USAGE);
      return sub === undefined ? 2 : 0;
    default:
      process.stderr.write(`lab: unknown command ${JSON.stringify(sub)}\n\n${LAB_USAGE}`);
      return 2;
  }
}

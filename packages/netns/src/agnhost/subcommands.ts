// Which agnhost subcommands the lab runs as our own programs, and which other names agnhost has. The lab reads
// these to decide what an agnhost container's args mean: an implemented subcommand runs main.ts; another agnhost
// subcommand runs main.ts too, which exits saying it is not implemented (a container that fails visibly, rather
// than a pod server that answers something else); any other word (`sh`, `curl`) is a command run as given.
export const IMPLEMENTED_SUBCOMMANDS = ['netexec', 'serve-hostname', 'porter', 'connect', 'pause'] as const;

export type AgnhostSubcommand = (typeof IMPLEMENTED_SUBCOMMANDS)[number];

/** agnhost's other subcommands (agnhost.go), none of which the lab implements. */
export const OTHER_SUBCOMMANDS: readonly string[] = [
  'audit-proxy',
  'crd-conversion-webhook',
  'dns-suffix',
  'dns-server-list',
  'etc-hosts',
  'entrypoint-tester',
  'fake-gitserver',
  'grpc-health-checking',
  'guestbook',
  'inclusterclient',
  'liveness',
  'logs-generator',
  'mounttest',
  'net',
  'nettest',
  'no-snat-test',
  'no-snat-test-proxy',
  'port-forward-tester',
  'resource-consumer-controller',
  'test-webserver',
  'webhook',
  'test-service-account-issuer-discovery',
  'tcp-reset',
];

export function isImplementedSubcommand(word: string | undefined): word is AgnhostSubcommand {
  return (IMPLEMENTED_SUBCOMMANDS as readonly string[]).includes(word ?? '');
}

export function isAgnhostSubcommand(word: string | undefined): boolean {
  return isImplementedSubcommand(word) || OTHER_SUBCOMMANDS.includes(word ?? '');
}

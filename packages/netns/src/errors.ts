// A failed `ip`/`sysctl`/`kill` call, with what was asked and where, so a broken set-up reads as
// "ip -n kpts1a2b3c-n0 link add … : RTNETLINK answers: File exists" rather than "exit 2".

export class NetnsCommandError extends Error {
  readonly code = 'NETNS_COMMAND_FAILED';
  constructor(
    /** What we were doing, in words ("add veth n0-eth0 ↔ eth0"). */
    readonly action: string,
    /** The command line as run. */
    readonly command: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`${action}: \`${command.join(' ')}\` exited ${exitCode}: ${stderr.trim() || '(no stderr)'}`);
    this.name = 'NetnsCommandError';
  }
}

/** A name we refuse before running anything (too long for the kernel, or not a namespace/link name). */
export class NetnsNameError extends Error {
  readonly code = 'NETNS_BAD_NAME';
  constructor(
    readonly what: 'namespace' | 'interface',
    readonly value: string,
    readonly reason: string,
  ) {
    super(`${what} name ${JSON.stringify(value)}: ${reason}`);
    this.name = 'NetnsNameError';
  }
}

// The `--state-dir DIR` (or `--state-dir=DIR`) that the lab's commands without flags of their own (down, status,
// exec, web, …) take among their other words. Everything from a `--` on is left as it is: it is the command that
// `lab exec` runs.

/** The state directory and the other words, in order; a message when the flag has no value. */
export function stateDirArg(
  argv: readonly string[],
  defaultStateDir: string,
): { stateDir: string; rest: string[] } | string {
  const rest: string[] = [];
  let stateDir = defaultStateDir;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (a === '--state-dir') {
      const v = argv[++i];
      if (v === undefined) return '--state-dir needs a value';
      stateDir = v;
    } else if (a.startsWith('--state-dir=')) stateDir = a.slice('--state-dir='.length);
    else rest.push(a);
  }
  return { stateDir, rest };
}

// Where a command would run from: the PATH lookup a shell does, for commands that check a tool before they need it
// (the lab's plugin hand-off, `lab up --image`'s runtime).
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The first executable called `name` in the directories of `path` (a PATH value), or undefined. */
export function findOnPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here: the next directory
    }
  }
  return undefined;
}

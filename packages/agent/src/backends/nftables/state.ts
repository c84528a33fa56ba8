// What an nftables agent leaves for the next one on the same node when it stops, so that a restart (a DaemonSet
// rollout, a crash-free upgrade) trusts the table it finds instead of flushing and refilling every set and map:
// at 100,000 flat Services that refill is 1.2 million element operations and seconds of the kernel's time.
//
// The state is small and says how to check it rather than what the table holds:
// - the ruleset generation after the last agent's last transaction (netlink/generation.ts): the kernel raises it
//   on every nf_tables commit in the namespace, by anyone, so an unchanged generation means nothing was written
//   since, to our table or any other;
// - a digest of the elements the last agent's table held (digest.ts), under a seed of its own: the new agent
//   renders its model and computes the same digest of what it wants; equal means the cluster did not change in
//   a way that touches an element while no agent ran;
// - the memos that rendering needs to give the same elements (the flat layout's slots where they moved away from
//   the model's order: usually none; PortRendering.carries);
// - the namespace's identity, the family, the layout.
// All of them must match, or the full sync refills as it always did (backend.ts says which failed). The file is
// read once and deleted as it is read: it describes one moment, which the new agent's first commit ends.
import { randomInt } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { errorMessage } from '../../util/error-message.js';

const FORMAT = 1;

export interface SavedNftablesState {
  readonly format: typeof FORMAT;
  readonly family: string;
  readonly layout: string;
  /** /proc/self/ns/net's device and inode: which network namespace the table is in. */
  readonly netns: string;
  readonly generation: number;
  readonly seed: number;
  readonly digest: string;
  readonly memos: readonly (readonly [string, unknown])[];
}

/** The file of one family's state in `dir` (--nftables-state-dir). */
export function stateFile(dir: string, family: 'ip' | 'ip6'): string {
  return join(dir, `nftables-${family}.json`);
}

/** This process's network namespace, as the kernel names it (device:inode of /proc/self/ns/net). */
export function netnsIdentity(): string {
  try {
    const s = statSync('/proc/self/ns/net');
    return `${s.dev}:${s.ino}`;
  } catch {
    return 'unknown';
  }
}

/** A fresh seed for a digest that a saved state will hold. */
export function newSeed(): number {
  return randomInt(0, 2 ** 32 - 1);
}

/** Writes `state` (this format, this namespace) to `path` (only root reads it), whole or not at all. */
export async function saveState(
  path: string,
  fields: Omit<SavedNftablesState, 'format' | 'netns'>,
): Promise<void> {
  const state: SavedNftablesState = { format: FORMAT, netns: netnsIdentity(), ...fields };
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, JSON.stringify(state), { mode: 0o600 });
    await rename(temporary, path);
  } catch (e) {
    await rm(temporary, { force: true });
    throw e;
  }
}

export type TakenState =
  | { readonly kind: 'none' }
  | { readonly kind: 'state'; readonly state: SavedNftablesState }
  | { readonly kind: 'unreadable'; readonly reason: string };

/** Reads the state at `path` and deletes the file; none when there is no file. */
export async function takeState(path: string): Promise<TakenState> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    return { kind: 'unreadable', reason: errorMessage(e) };
  }
  await rm(path, { force: true }).catch(() => undefined);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { kind: 'unreadable', reason: `not JSON (${errorMessage(e)})` };
  }
  const problem = stateProblem(value);
  return problem === undefined
    ? { kind: 'state', state: value as SavedNftablesState }
    : { kind: 'unreadable', reason: problem };
}

function stateProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const v = value as Record<string, unknown>;
  if (v.format !== FORMAT) return `format ${String(v.format)}, not ${FORMAT}`;
  for (const field of ['family', 'layout', 'netns', 'digest'] as const)
    if (typeof v[field] !== 'string') return `${field} is not a string`;
  for (const field of ['generation', 'seed'] as const)
    if (!Number.isInteger(v[field])) return `${field} is not an integer`;
  if (!Array.isArray(v.memos)) return 'memos is not a list';
  for (const m of v.memos as unknown[])
    if (!Array.isArray(m) || m.length !== 2 || typeof m[0] !== 'string') return 'a memo is not [port, memo]';
  return undefined;
}

/**
 * Why the table cannot be trusted to hold what the saved state says, or undefined when it can. `generation` is
 * the kernel's now (undefined: it could not be read), `digest` what this agent wants under the state's seed.
 */
export function adoptionProblem(
  saved: SavedNftablesState,
  now: { family: string; layout: string; netns: string; generation: number | undefined },
  digest: () => string,
): string | undefined {
  if (saved.family !== now.family) return `the state is of family ${saved.family}`;
  if (saved.layout !== now.layout) return `the state is of the ${saved.layout} layout`;
  if (saved.netns !== now.netns) return 'the state is of another network namespace';
  if (now.generation === undefined) return 'the ruleset generation could not be read';
  if (now.generation !== saved.generation)
    return `the ruleset was written since the last agent stopped (generation ${now.generation}, saved at ${saved.generation})`;
  const wanted = digest();
  if (wanted !== saved.digest)
    return `the cluster's elements changed while no agent ran (digest ${wanted}, saved ${saved.digest})`;
  return undefined;
}

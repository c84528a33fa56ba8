// Summaries of request outcomes that scenarios assert on.
import type { RequestOutcome } from './traffic.js';

export type Answered = Extract<RequestOutcome, { ok: true }>;
export type Failed = Extract<RequestOutcome, { ok: false }>;

export function answered(outcomes: readonly RequestOutcome[]): Answered[] {
  return outcomes.filter((o): o is Answered => o.ok);
}

export function failed(outcomes: readonly RequestOutcome[]): Failed[] {
  return outcomes.filter((o): o is Failed => !o.ok);
}

/** The pods that answered, sorted. */
export function podsThatAnswered(outcomes: readonly RequestOutcome[]): string[] {
  return [...new Set(answered(outcomes).map((o) => o.pod))].sort();
}

/** The client addresses the pods saw, sorted. */
export function sourcesSeen(outcomes: readonly RequestOutcome[]): string[] {
  return [...new Set(answered(outcomes).map((o) => o.clientIP))].sort();
}

/** Failure kinds with counts, e.g. { ECONNREFUSED: 3 }, for messages and assertions. */
export function errorKinds(outcomes: readonly RequestOutcome[]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const f of failed(outcomes)) kinds[f.error] = (kinds[f.error] ?? 0) + 1;
  return kinds;
}

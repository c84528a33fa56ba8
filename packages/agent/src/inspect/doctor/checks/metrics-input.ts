// Shared by the checks that read the agent's /metrics: the samples, or a finding that says they are missing.
import type { CheckOutcome, DoctorCheck, DoctorContext } from '../types.js';
import { skipped } from '../types.js';
import type { MetricSamples } from '../../prometheus.js';

export function metricsOrSkip(ctx: DoctorContext): MetricSamples | CheckOutcome {
  if ('error' in ctx.metrics) return skipped(`no metrics from ${ctx.metricsURL} (${ctx.metrics.error})`);
  return ctx.metrics;
}

export function isFinding(x: MetricSamples | CheckOutcome): x is CheckOutcome {
  return 'severity' in x;
}

/** A check that judges the agent's /metrics alone: without them it is not checked. */
export function metricsCheck(
  id: string,
  title: string,
  judge: (m: MetricSamples, ctx: DoctorContext) => CheckOutcome,
): DoctorCheck {
  return {
    id,
    title,
    async run(ctx) {
      const m = metricsOrSkip(ctx);
      return isFinding(m) ? m : judge(m, ctx);
    },
  };
}

export function seconds(n: number | undefined): string {
  if (n === undefined) return '?';
  if (n === Infinity) return '+Inf';
  return n >= 10 ? `${n.toFixed(0)} s` : n >= 0.1 ? `${n.toFixed(2)} s` : `${(n * 1000).toFixed(1)} ms`;
}

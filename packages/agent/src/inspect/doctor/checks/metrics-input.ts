// Shared by the checks that read the agent's /metrics: the samples, or a finding that says they are missing.
import type { DoctorContext, Finding } from '../types.js';
import { notChecked } from '../types.js';
import type { MetricSamples } from '../../prometheus.js';

export function metricsOrSkip(ctx: DoctorContext, id: string): MetricSamples | Finding {
  if ('error' in ctx.metrics)
    return notChecked(id, `no metrics from ${ctx.metricsURL} (${ctx.metrics.error})`);
  return ctx.metrics;
}

export function isFinding(x: MetricSamples | Finding): x is Finding {
  return 'severity' in x;
}

export function seconds(n: number | undefined): string {
  if (n === undefined) return '?';
  if (n === Infinity) return '+Inf';
  return n >= 10 ? `${n.toFixed(0)} s` : n >= 0.1 ? `${n.toFixed(2)} s` : `${(n * 1000).toFixed(1)} ms`;
}

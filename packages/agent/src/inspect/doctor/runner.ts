// Runs the checks one after another (each reads the kernel through the runner; in parallel they would only
// compete for the same tools) and turns the findings into the exit status: 0 all ok, 1 a warning, 2 a failure.
// A check that throws becomes a failing finding of its own id, with the error as evidence, so one broken check
// never hides the others.
import { DOCTOR_CHECKS } from './checks/index.js';
import type { DoctorCheck, DoctorContext, Finding } from './types.js';
import { errorMessage } from '../../util/error-message.js';

export interface DoctorReport {
  readonly findings: readonly Finding[];
  readonly exitCode: 0 | 1 | 2;
}

export function exitCodeOf(findings: readonly Finding[]): 0 | 1 | 2 {
  if (findings.some((f) => f.severity === 'fail')) return 2;
  if (findings.some((f) => f.severity === 'warn')) return 1;
  return 0;
}

export async function runDoctor(
  ctx: DoctorContext,
  checks: readonly DoctorCheck[] = DOCTOR_CHECKS,
): Promise<DoctorReport> {
  const findings: Finding[] = [];
  for (const check of checks) {
    try {
      findings.push({ id: check.id, ...(await check.run(ctx)) });
    } catch (e) {
      findings.push({
        id: check.id,
        severity: 'fail',
        summary: 'the check itself failed',
        evidence: [errorMessage(e)],
        remedy: 'report this with the evidence; the other checks are unaffected',
      });
    }
  }
  return { findings, exitCode: exitCodeOf(findings) };
}

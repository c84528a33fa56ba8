// Every doctor check, in the order seed 003's playbook walks them: is the proxy alive, are syncs failing or
// slow, are changes stuck, is the lock the reason, then what the kernel holds.
import type { DoctorCheck } from '../types.js';
import { conntrackFull } from './conntrack-full.js';
import { leftoverOtherMode } from './leftover-other-mode.js';
import { pendingStuck } from './pending-stuck.js';
import { proxyHealth } from './proxy-health.js';
import { staleUdpConntrack } from './stale-udp-conntrack.js';
import { syncFailing } from './sync-failing.js';
import { syncSlow } from './sync-slow.js';
import { sysctls } from './sysctls.js';
import { xtablesLockContention } from './xtables-lock.js';

export const DOCTOR_CHECKS: readonly DoctorCheck[] = [
  proxyHealth,
  syncFailing,
  syncSlow,
  pendingStuck,
  xtablesLockContention,
  leftoverOtherMode,
  staleUdpConntrack,
  conntrackFull,
  sysctls,
];

// The peak RSS of the kernel tools this process starts (nft, iptables-restore): they are not ours, so the
// benchmark reports them beside our own peak. Linux keeps a per-process high-water mark (VmHWM); we read it for
// our direct children every few milliseconds while a run is in flight (`ip netns exec` execs the tool in place,
// so the child is the tool itself). A sample can miss the last few ms of a short-lived child, never a peak that
// happened earlier in its life.
import { readFileSync, readdirSync } from 'node:fs';

function childPids(): number[] {
  const pids: number[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const text = readFileSync(`/proc/self/task/${tid}/children`, 'utf8').trim();
      if (text !== '') for (const p of text.split(' ')) pids.push(Number(p));
    } catch {
      // the thread ended
    }
  }
  return pids;
}

function highWaterKiB(pid: number, names: readonly string[]): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const name = /^Name:\s*(\S+)/m.exec(status)?.[1] ?? '';
    if (!names.includes(name)) return 0;
    return Number(/^VmHWM:\s*(\d+)/m.exec(status)?.[1] ?? 0);
  } catch {
    return 0; // exited between the listing and the read
  }
}

/** Samples children named `names` until stop(), which returns their largest peak RSS in MiB. */
export function sampleChildPeakRss(names: readonly string[], everyMs = 5): { stop(): number } {
  let peakKiB = 0;
  const sample = (): void => {
    for (const pid of childPids()) peakKiB = Math.max(peakKiB, highWaterKiB(pid, names));
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peakKiB / 1024;
    },
  };
}

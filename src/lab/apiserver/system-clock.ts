// The real clock, for when no Clock is injected. (src/sync/clock.ts declares the interface; this keeps the lab
// free of a runtime dependency on the sync package.)
import type { Clock, TimerHandle } from '../../sync/clock.js';

export function realClock(): Clock {
  const timers = new Map<number, ReturnType<typeof setTimeout>>();
  let next = 1;
  return {
    now: () => Date.now(),
    setTimeout(fn, ms) {
      const id = next++;
      const t = setTimeout(() => {
        timers.delete(id);
        fn();
      }, ms);
      t.unref?.();
      timers.set(id, t);
      return { id };
    },
    clearTimeout(handle: TimerHandle) {
      const t = timers.get(handle.id);
      if (t !== undefined) clearTimeout(t);
      timers.delete(handle.id);
    },
  };
}

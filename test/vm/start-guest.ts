// A host process that starts a guest and then only waits: guest.test.ts kills it with SIGKILL, as a crash or an
// OOM kill would, and checks what that leaves and that the sweep removes it. Prints one JSON line once the guest is
// ready: {"pid": QEMU's pid}. Arguments: STATE_DIR NAMESPACE TAP.
import { startGuest } from '../../packages/lab/src/vm/guest.js';

const [stateDir, namespace, tap] = process.argv.slice(2);
if (stateDir === undefined || namespace === undefined || tap === undefined) {
  console.error('usage: start-guest.ts STATE_DIR NAMESPACE TAP');
  process.exit(2);
}
const guest = await startGuest({
  stateDir,
  network: {
    namespace,
    createNamespace: true,
    tap,
    guestAddress: '198.18.0.6/30',
    hostAddress: '198.18.0.5/30',
  },
});
console.log(JSON.stringify({ pid: guest.pid }));
setInterval(() => {}, 1 << 30); // keep running until killed

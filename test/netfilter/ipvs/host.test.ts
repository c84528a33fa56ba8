// openIpvs() on this machine's own kernel, in a network namespace the test makes (never the root namespace). A
// kernel without IPVS (this machine's: CONFIG_IP_VS is not set) must get the plain error, as a value; a kernel
// with it must get a handle that works (nothing listed in a new namespace, the default timeouts). Which of the two
// is expected is read apart from the client: the kernel's configuration when it says "not set", and otherwise
// /proc/net/ip_vs in the namespace after the attempt (asking for the family loads a modular ip_vs).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { release } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import { kernelNamespaces, runInNamespace } from '../../helpers/kernel.js';

interface Report {
  readonly opened?: boolean;
  readonly error?: string;
  readonly reason?: string;
  readonly virtualServers?: unknown;
  readonly timeouts?: unknown;
  readonly afterClose?: { ok: boolean; errno?: number };
  readonly threw?: string;
  readonly procNetIpVs: boolean;
}

/** CONFIG_IP_VS of the running kernel ("y", "m", "not set"), when its configuration can be read. */
function configIpVs(): string | undefined {
  const boot = `/boot/config-${release()}`;
  let text: string | undefined;
  if (existsSync('/proc/config.gz')) text = gunzipSync(readFileSync('/proc/config.gz')).toString('utf8');
  else if (existsSync(boot)) text = readFileSync(boot, 'utf8');
  if (text === undefined) return undefined;
  if (/^# CONFIG_IP_VS is not set$/m.test(text)) return 'not set';
  return /^CONFIG_IP_VS=(\w+)$/m.exec(text)?.[1];
}

const suite = kernelNamespaces(['ipvs'], ['ip']);

describe("openIpvs on this machine's kernel, in a new network namespace", suite.options, () => {
  suite.hooks();

  test('the plain error without IPVS, a working handle with it; never a throw', async () => {
    const [ns] = suite.names;
    const r = await runInNamespace<Report>(ns, new URL('./open-child.ts', import.meta.url));
    assert.equal(r.threw, undefined, `openIpvs threw: ${r.threw}`);
    const config = configIpVs();
    if (config === 'not set') assert.equal(r.procNetIpVs, false, 'no ip_vs in a kernel built without it');
    const netns = execFileSync('ip', ['netns', 'identify', String(process.pid)], { encoding: 'utf8' }).trim();
    assert.equal(
      netns,
      '',
      'the test itself stays in the root namespace; only the child entered the new one',
    );
    if (!r.procNetIpVs) {
      console.log(
        `# kernel ${release()} (CONFIG_IP_VS ${config ?? 'unknown'}): no IPVS, and openIpvs says so`,
      );
      assert.deepEqual(
        { opened: r.opened, reason: r.reason, error: r.error },
        {
          opened: false,
          reason: 'no-family',
          error:
            'the kernel has no IPVS (generic netlink family IPVS not found; is the ip_vs module loaded?)',
        },
      );
      return;
    }
    console.log(`# kernel ${release()} (CONFIG_IP_VS ${config ?? 'unknown'}) has IPVS: the handle must work`);
    assert.equal(r.opened, true, `a kernel with IPVS, but: ${r.error}`);
    assert.deepEqual(r.virtualServers, { ok: true, value: [] });
    assert.deepEqual(r.timeouts, { ok: true, value: { tcp: 900, tcpFin: 120, udp: 300 } });
    assert.equal(r.afterClose?.errno, 9, 'a closed handle answers EBADF');
  });
});

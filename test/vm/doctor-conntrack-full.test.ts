// doctor's conntrack-full check on a kernel whose conntrack table the test may fill: the host's table and its
// nf_conntrack_max are the host's own (never touched), so the test lowers the limit and fills the table inside a
// guest on Debian's kernel, whose init network namespace is the guest's. The check must say ok before, fail after.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import { startGuest, type Guest } from '../../packages/lab/src/vm/guest.js';
import { AGENT_MAIN, SOURCE_FLAGS } from '../helpers/cli.js';
import { GUEST_TOOLS } from './guest-tools.js';
import { kernelOptions } from '../helpers/kernel.js';

const TOOLS = [...GUEST_TOOLS, 'conntrack'];
const options = kernelOptions(TOOLS);
const REPO_ROOT = new URL('../..', import.meta.url).pathname;

const CONNTRACK_MAX = 64;
/** 60 of 64 (94 %): past the check's failure threshold (90 %), with room left for the kernel's own. */
const FLOWS = 60;

interface Finding {
  readonly id: string;
  readonly severity: 'ok' | 'warn' | 'fail' | 'skipped';
  readonly summary: string;
  readonly evidence: readonly string[];
}

/** `kube-proxy-ts doctor -o json` in the guest, with no agent to ask (its endpoints are a closed port). */
async function doctorInGuest(guest: Guest): Promise<Finding> {
  const closed = 'http://127.0.0.1:9';
  const r = await guest.run(
    [
      process.execPath,
      ...SOURCE_FLAGS,
      AGENT_MAIN,
      'doctor',
      '--metrics-url',
      `${closed}/metrics`,
      '--healthz-url',
      `${closed}/healthz`,
      '--proxy-mode',
      'nftables',
      '-o',
      'json',
    ],
    // Node.js with tsx starts in ~10 s under emulation: a generous ceiling.
    { cwd: REPO_ROOT, env: { HOME: '/root' }, timeoutMs: 300_000 },
  );
  // Exit 0–2 are findings (ok, warn, fail); 3 and above a usage error or a crash.
  assert.ok(r.code <= 2, `doctor exited ${r.code}: ${r.stdout}${r.stderr}`);
  const report = JSON.parse(r.stdout) as { findings: Finding[] };
  const finding = report.findings.find((f) => f.id === 'conntrack-full');
  assert.ok(finding, `doctor reports conntrack-full: ${r.stdout}`);
  return finding;
}

async function sysctl(guest: Guest, key: string): Promise<number> {
  const r = await guest.run(['sysctl', '-n', key]);
  assert.equal(r.code, 0, r.stderr);
  return Number(r.stdout.trim());
}

describe("doctor's conntrack-full in a guest", options, () => {
  // Short: the control socket's path must fit a Unix socket address.
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  after(async () => {
    await sweepGuests(stateRoot, { all: true });
    rmSync(stateRoot, { recursive: true, force: true });
  });

  test('fires once the table is filled past 90 % of nf_conntrack_max, not before', async () => {
    let guest: Guest | undefined;
    try {
      guest = await startGuest({ stateDir: join(stateRoot, 'd1'), hostname: 'kpts-doctor', hostTmp: true });
      // The guest's own kernel: its init network namespace is the guest's, so the global limit is the test's.
      const set = await guest.run(['sysctl', '-w', `net.netfilter.nf_conntrack_max=${CONNTRACK_MAX}`]);
      assert.equal(set.code, 0, set.stderr);
      assert.equal(await sysctl(guest, 'net.netfilter.nf_conntrack_max'), CONNTRACK_MAX);

      const before = await doctorInGuest(guest);
      assert.equal(before.severity, 'ok', `before filling: ${JSON.stringify(before)}`);

      // UDP flows inserted through conntrack's netlink: entries as real ones are, each with a long timeout so none
      // expires while doctor runs.
      const fill = await guest.run(
        `for i in $(seq 1 ${FLOWS}); do ` +
          'conntrack -I -p udp -s 198.18.0.1 -d 198.18.0.2 --sport $((10000 + i)) --dport 53 -t 3600 ' +
          '>/dev/null 2>&1 || { echo "insert $i failed"; exit 1; }; done',
        { timeoutMs: 300_000 },
      );
      assert.equal(fill.code, 0, `${fill.stdout}${fill.stderr}`);
      const count = await sysctl(guest, 'net.netfilter.nf_conntrack_count');
      assert.ok(count >= FLOWS, `the table holds the ${FLOWS} flows (count ${count})`);

      const afterFill = await doctorInGuest(guest);
      assert.equal(afterFill.severity, 'fail', `after filling: ${JSON.stringify(afterFill)}`);
      assert.match(afterFill.summary, /conntrack table is \d+ % full/);
      assert.match(afterFill.evidence.join('\n'), new RegExp(`of nf_conntrack_max ${CONNTRACK_MAX} `));
      console.log(
        `# vm: kernel ${guest.release}; conntrack-full before: ${before.evidence.join('; ')}; ` +
          `after: ${afterFill.evidence.join('; ')}`,
      );
    } finally {
      await guest?.stop();
    }
  });
});

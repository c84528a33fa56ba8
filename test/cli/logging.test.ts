// The agent's log lines carry klog's whole header, as tools that parse kube-proxy's logs expect it:
// `Lmmdd hh:mm:ss.uuuuuu PID file:line] "msg" key=value`, the file and line being the logger's caller.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { processLogger } from '../../packages/agent/src/cli/logging.js';

/** klog's header, as klog's own parsers read it (level, date, time, thread, file:line). */
const KLOG_LINE = /^([IWE])(\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6}) +(\d+) ([^ :\]]+):(\d+)\] (.*)$/;

function capture(
  format: 'text' | 'json',
  verbosity = 0,
): { lines: string[]; logger: ReturnType<typeof processLogger> } {
  const lines: string[] = [];
  const logger = processLogger({
    format,
    verbosity,
    write: (line) => void lines.push(line.replace(/\n$/, '')),
    now: () => new Date(2026, 11, 1, 20, 3, 30, 25),
  });
  return { lines, logger };
}

describe('klog header', () => {
  test('text lines: level, date, time, PID, the caller file:line, then the message and fields', () => {
    const { lines, logger } = capture('text');
    const here = new Error().stack?.split('\n')[1]?.match(/:(\d+):\d+\)?$/)?.[1];
    logger.info('Using nftables Proxier', { ipFamily: 'IPv4' }); // one line below `here`
    const m = KLOG_LINE.exec(lines[0] ?? '');
    assert.ok(m, `not a klog line: ${lines[0]}`);
    assert.deepEqual(m.slice(1, 5), ['I', '1201', '20:03:30.025000', String(process.pid)]);
    assert.equal(m[5], 'logging.test.ts');
    assert.equal(Number(m[6]), Number(here) + 1);
    assert.equal(m[7], '"Using nftables Proxier" ipFamily="IPv4"');
  });

  test('warnings, errors, -v records and child loggers name their own caller, not the logger', () => {
    const { lines, logger } = capture('text', 4);
    const child = logger.child({ component: 'proxier' });
    child.warn('slow sync');
    child.error('sync failed', { error: 'nft: exit 1' });
    child.v(4, () => ({ msg: 'detail' }));
    assert.equal(lines.length, 3);
    for (const [line, level] of lines.map((l, i) => [l, 'WEI'[i]] as const)) {
      const m = KLOG_LINE.exec(line);
      assert.ok(m, `not a klog line: ${line}`);
      assert.equal(m[1], level);
      assert.equal(m[5], 'logging.test.ts', line);
    }
    assert.notEqual(KLOG_LINE.exec(lines[0] ?? '')?.[6], KLOG_LINE.exec(lines[1] ?? '')?.[6]);
  });

  test('JSON lines carry the caller as klog/zap write it ("caller": "file:line")', () => {
    const { lines, logger } = capture('json');
    logger.info('hello');
    const record = JSON.parse(lines[0] ?? '{}') as { caller?: string; msg?: string };
    assert.equal(record.msg, 'hello');
    assert.match(record.caller ?? '', /^logging\.test\.ts:\d+$/);
  });
});

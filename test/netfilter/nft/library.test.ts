// The executor over libnftables against `nft -f`: the same syncs and failures (library-scenario.ts) run through the
// library in a child process inside one namespace (library-child.ts) and through the `nft` binary in another must
// leave the same table after every step, read the same back and report the same errors (nft's text, the failing
// line). Also: how the executor is chosen, and the fallback when the library does not load.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hostCommandRunner, netnsCommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import { chooseNftExecutors } from '../../../packages/agent/src/netfilter/nft/choose-executor.js';
import { NftCommandExecutor } from '../../../packages/agent/src/netfilter/nft/executor.js';
import type { CommandRunner } from '../../../packages/agent/src/netfilter/command.js';
import type { LibnftablesContext } from '../../../packages/agent/src/netfilter/nft/libnftables.js';
import { loadLibnftables } from '../../../packages/agent/src/netfilter/nft/libnftables.js';
import {
  LIBRARY_MAX_TEXT_BYTES,
  NftLibraryExecutor,
} from '../../../packages/agent/src/netfilter/nft/library-executor.js';
import { NftTransaction } from '../../../packages/agent/src/netfilter/nft/transaction.js';
import { kernelNamespaces, runInNamespace } from '../../helpers/kernel.js';
import type { ScenarioRecord } from './library-scenario.js';
import { runScenario } from './library-scenario.js';

const suite = kernelNamespaces(['lib', 'cli']);
const [libraryNs, cliNs] = suite.names;

/** Runs library-child.ts inside `ns` and returns what it printed. */
function runChild(ns: string): Promise<{ chosen: unknown; records: ScenarioRecord[] }> {
  return runInNamespace(ns, new URL('./library-child.ts', import.meta.url));
}

describe('the libnftables executor against nft -f', suite.options, () => {
  suite.hooks();

  test('every step leaves the same table, reads the same back and fails the same way', async () => {
    const cli = netnsCommandRunner(cliNs);
    const [library, binary] = await Promise.all([
      runChild(libraryNs),
      runScenario((ref) => new NftCommandExecutor(ref, cli), cli),
    ]);
    // Inside its namespace, with the library present, auto picks the library.
    assert.deepEqual(library.chosen, { kind: 'library' });
    assert.deepEqual(
      library.records.map((r) => r.step),
      binary.map((r) => r.step),
    );
    for (const [i, expected] of binary.entries()) {
      assert.deepEqual(library.records[i], expected, expected.step);
    }
    // The comparison is not vacuous: the table was there, the errors were errors, nft's line was found.
    const at = (step: string): ScenarioRecord | undefined => binary.find((r) => r.step === step);
    assert.match(at('IPv4 flat full sync')?.table ?? '', /map endpoints-tcp/);
    assert.match(at('IPv6 switch to upstream')?.table ?? '', /table ip6 kube-proxy/);
    const bad = at('IPv4 bad transaction')?.error;
    assert.equal(bad?.code, 'NotFound');
    assert.match(bad?.message ?? '', /no-such-set/);
    assert.match(bad?.detail ?? '', /^INPUT:\d+:\d+-\d+: Error: /m);
    assert.match(
      at('IPv4 syntax error')?.error?.detail ?? '',
      /^INPUT:1:39-43: Error: No symbol type information\n/,
    );
    assert.equal(at('IPv6 listing a missing table')?.error?.code, 'NotFound');
    assert.doesNotMatch(at('IPv4 check only')?.table ?? 'absent', /checked-only|absent/);
  });
});

describe('choosing the executor', () => {
  const missing = (): { error: string } => ({ error: 'libnftables.so.1 did not load: (test)' });

  test('auto keeps the nft command, saying why, when the library does not load', () => {
    const chosen = chooseNftExecutors('auto', hostCommandRunner, missing);
    assert.ok(!('error' in chosen));
    assert.equal(chosen.kind, 'cli');
    assert.match(chosen.reason, /did not load: \(test\); using the nft command/);
    assert.ok(chosen.create({ family: 'ip', table: 'kube-proxy' }) instanceof NftCommandExecutor);
  });

  test('library refuses instead', () => {
    assert.deepEqual(chooseNftExecutors('library', hostCommandRunner, missing), {
      error: '--nft-executor=library: libnftables.so.1 did not load: (test)',
    });
  });

  test('a runner into another namespace never gets the library, and the library is not even loaded', () => {
    let loads = 0;
    const load = (): { error: string } => (loads++, missing());
    const chosen = chooseNftExecutors('auto', netnsCommandRunner('elsewhere'), load);
    assert.ok(!('error' in chosen) && chosen.kind === 'cli');
    assert.match(chosen.reason, /another network namespace/);
    assert.ok('error' in chooseNftExecutors('library', netnsCommandRunner('elsewhere'), load));
    const cli = chooseNftExecutors('cli', hostCommandRunner, load);
    assert.ok(!('error' in cli) && cli.kind === 'cli');
    assert.equal(loads, 0);
  });

  test('a library that is not installed is an error value, not an exception', () => {
    const r = loadLibnftables('libnftables-kpts-missing.so.0');
    assert.ok('error' in r);
    assert.match(r.error, /libnftables-kpts-missing\.so\.0 did not load/);
  });
});

describe('what the library executor sends where', () => {
  const calls: string[] = [];
  const ctx: LibnftablesContext = {
    runText: async (text) => (calls.push(`library ${text.length}`), { code: 0, stdout: '', stderr: '' }),
    close: () => {},
  };
  const commands: CommandRunner = {
    run: async (cmd, args, o) => {
      calls.push(`${cmd} ${args.join(' ')} ${o?.stdin?.length ?? ''}`.trim());
      return {
        code: 0,
        stdout: '{"nftables": [{"table": {"family": "ip", "name": "kube-proxy"}}]}',
        stderr: '',
      };
    },
  };
  const exec = new NftLibraryExecutor({ family: 'ip', table: 'kube-proxy' }, ctx, commands);

  test('a delta goes to the library; a transaction over the limit and every listing to the nft command', async () => {
    calls.length = 0;
    await exec.run(
      new NftTransaction().add('add', { kind: 'element', set: 'cluster-ips', key: ['198.18.0.1'] }),
    );
    const many = new NftTransaction();
    const count = Math.ceil(LIBRARY_MAX_TEXT_BYTES / 12);
    for (let i = 0; i < count; i++) {
      many.add('add', { kind: 'element', set: 'cluster-ips', key: [`198.18.${(i >> 8) & 255}.${i & 255}`] });
    }
    await exec.run(many);
    await exec.list();
    assert.equal(calls.length, 3, calls.join('\n'));
    assert.match(calls[0] ?? '', /^library \d+$/);
    assert.match(calls[1] ?? '', /^nft -f - \d+$/);
    assert.ok(Number(/\d+$/.exec(calls[1] ?? '')?.[0]) > LIBRARY_MAX_TEXT_BYTES);
    assert.equal(calls[2], 'nft --json --terse list table ip kube-proxy');
  });
});

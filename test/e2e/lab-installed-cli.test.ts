// The CLI as a new user meets it after the README's set-up: `kube-proxy-ts` on the system PATH (scripts/setup.sh
// puts it there), `kube-proxy-ts lab up` starting the lab through the lab package's own command, and every command
// the banner prints running as printed in a new shell: a clean environment with the system's PATH, nothing of this
// test runner's (no node_modules/.bin, no tsx).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { kernelOptions, kernelRequired } from '../helpers/kernel.js';
import { run, waitFor } from './helpers.js';
import { endLabSuite, labTurn, newLabPlace } from './helpers/lab-turn.js';
import { spawnLabUp, type LabUp } from './helpers/lab-up.js';
import { SYSTEM_PATH } from '../helpers/cli.js';

const NEW_SHELL_ENV = { PATH: SYSTEM_PATH, HOME: '/root', LANG: 'C.UTF-8' };

/** `bash -c SCRIPT` in a new shell: nothing of this process's environment but NEW_SHELL_ENV. */
const NEW_BASH = ['env', '-i', ...Object.entries(NEW_SHELL_ENV).map(([k, v]) => `${k}=${v}`), 'bash', '-c'];

/** Runs `script` in a new bash with nothing of this process's environment but NEW_SHELL_ENV. */
function inNewShell(script: string): ReturnType<typeof run> {
  const [cmd = '', ...args] = NEW_BASH;
  return run(cmd, [...args, script]);
}

/** The banner's command lines: the indented lines of the paragraph after "The lab is up". */
export function bannerCommands(output: string): string[] {
  const start = output.indexOf('The lab is up');
  assert.ok(start >= 0, `no banner in:\n${output}`);
  const paragraph = output.slice(start).split('\n\n')[1] ?? '';
  return paragraph
    .split('\n')
    .filter((l) => l.startsWith('  '))
    .map((l) => l.trim());
}

const gate = kernelOptions(['ip', 'nft', 'kubectl', 'curl']);

describe(
  'the installed CLI: kube-proxy-ts on PATH and the lab banner (issue 23)',
  { skip: gate.skip, timeout: 600_000 },
  () => {
    const { prefix, stateDir } = newLabPlace();
    let lab: LabUp | undefined;
    let releaseTurn: () => void = () => undefined;

    before(
      async () => {
        const where = await inNewShell('command -v kube-proxy-ts && command -v kube-proxy-ts-lab');
        if (where.code !== 0) {
          const why =
            'kube-proxy-ts is not on the system PATH: run bash scripts/setup.sh (it installs the CLI)';
          if (kernelRequired) throw new Error(why);
          console.log(`# ${why}`);
        }
        releaseTurn = await labTurn();
        // The turn can take another lab suite's whole run: longer than one test's 10 minutes on a busy machine.
      },
      { timeout: 25 * 60_000 },
    );

    after(() => endLabSuite(lab, { stateDir, prefix }, releaseTurn));

    test('`kube-proxy-ts --version` and `kube-proxy-ts lab --help` run from a new shell', async () => {
      const version = await inNewShell('kube-proxy-ts --version');
      assert.equal(version.code, 0, version.stderr);
      assert.match(version.stdout, /^kube-proxy-ts v\d+\.\d+\.\d+/);
      const help = await inNewShell('kube-proxy-ts lab --help');
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /Usage: kube-proxy-ts lab COMMAND/);
    });

    test('without kube-proxy-ts-lab on PATH, `kube-proxy-ts lab` says where the lab comes from', async () => {
      const agentOnly = await inNewShell(
        `dir=$(mktemp -d); ln -s "$(command -v kube-proxy-ts)" "$dir/kube-proxy-ts"; ` +
          `PATH="$dir:/usr/bin:/bin"; kube-proxy-ts lab status; code=$?; rm -rf "$dir"; exit $code`,
      );
      assert.equal(agentOnly.code, 1);
      assert.match(
        agentOnly.stderr,
        /kube-proxy-ts-lab is not on PATH: the lab is the @kube-proxy-ts\/lab package/,
      );
    });

    test('`kube-proxy-ts lab up` from a new shell: every command its banner prints runs as printed', async () => {
      // A process group of its own, as a terminal's job: Ctrl-C goes to the whole group.
      const command = [...NEW_BASH, 'exec kube-proxy-ts lab up "$@"', 'bash'];
      const started = spawnLabUp({ stateDir, prefix }, ['--nodes', '2'], { command, detached: true });
      lab = started;
      await started.shown('Walkthrough:', 180_000);

      const commands = bannerCommands(started.stdout());
      assert.ok(commands.length >= 8, `banner commands: ${JSON.stringify(commands)}`);
      const [exportLine, ...rest] = commands;
      assert.match(exportLine ?? '', /^export KUBECONFIG=/);
      for (const command of rest) {
        // The pods may still be starting when the banner prints: each command gets a minute to answer.
        const r = await waitFor(
          command,
          60_000,
          async () => {
            const attempt = await inNewShell(`set -o pipefail; ${exportLine}; ${command}`);
            return attempt.code === 0 && attempt.stdout.trim() !== '' ? attempt : undefined;
          },
          2_000,
        );
        assert.ok(r.stdout.trim().length > 0, `${command} printed nothing`);
        if (command.includes('nft list table')) assert.match(r.stdout, /table ip kube-proxy/);
        if (command.includes('curl')) assert.match(r.stdout, /web-/);
      }

      process.kill(-(started.child.pid ?? 0), 'SIGINT');
      const code = await started.exited;
      assert.equal(code, 0, 'Ctrl-C through `kube-proxy-ts lab` ends the lab with 0');
      assert.match(started.stdout(), /nothing left behind/);
    });
  },
);

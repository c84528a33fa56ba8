// The import-direction rules in eslint.config.js: a file that imports against them fails `npm run lint` with a
// message naming the rule. Linted through ESLint's own API with the project's config, as `npm run lint` does.
// Two scales: packages (the agent imports nothing of the lab or the netns kit) and layers inside the agent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });
const AGENT = 'packages/agent/src';

async function problems(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  assert.ok(result !== undefined);
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

function expectOne(file: string, target: string, message: string): void {
  it(`${file} importing ${target} fails with "${message}"`, async () => {
    const found = await problems(file, `import '${target}';\n`);
    assert.equal(found.length, 1, `expected one import-direction error, got ${JSON.stringify(found)}`);
    assert.ok(found[0]?.includes(message), `${JSON.stringify(found[0])} does not say ${message}`);
  });
}

function expectNone(file: string, target: string): void {
  it(`${file} may import ${target}`, async () => {
    assert.deepEqual(await problems(file, `import '${target}';\n`), []);
  });
}

describe('package direction', () => {
  const agentMessage = 'package direction: the agent (packages/agent) must not import the lab';
  // Every layer of the agent, its CLI included, by the lab's package name and by a relative path into it.
  expectOne(`${AGENT}/cli/main.ts`, '@kube-proxy-ts/lab/cli/lab.js', agentMessage);
  expectOne(`${AGENT}/cli/run.ts`, '../../../lab/src/cluster/lab.js', agentMessage);
  expectOne(`${AGENT}/model/endpoint.ts`, '@kube-proxy-ts/lab/apiserver/index.js', agentMessage);
  expectOne(`${AGENT}/inspect/doctor/run.ts`, '@kube-proxy-ts/netns/index.js', agentMessage);
  expectOne(`${AGENT}/netfilter/command.ts`, '../../../netns/src/exec.js', agentMessage);
  expectOne(
    'packages/netns/src/exec.ts',
    '@kube-proxy-ts/lab/cluster/lab.js',
    'package direction: packages/netns must not import the lab',
  );
  expectOne(
    'packages/lab/src/cluster/lab.ts',
    '../../../agent/src/netfilter/command.js',
    'package direction: import another package by its name',
  );
  expectOne(
    'packages/lab/src/cluster/lab.ts',
    'kube-proxy-ts/cli/run.js',
    "import direction: the lab's cluster code must not import a CLI",
  );
  expectNone('packages/lab/src/cluster/lab.ts', 'kube-proxy-ts/netfilter/command.js');
  expectNone('packages/lab/src/cluster/lab.ts', '@kube-proxy-ts/netns/index.js');
  expectNone('packages/lab/src/cli/lab.ts', 'kube-proxy-ts/cli/logging.js');
  expectNone('packages/netns/src/exec.ts', 'kube-proxy-ts/netfilter/command.js');
});

describe('import direction inside the agent', () => {
  const forbidden: ReadonlyArray<readonly [string, string, string]> = [
    ['model/ip.ts', '../sync/proxier.js', 'src/model must not import src/sync'],
    ['model/topology.ts', '../backends/nftables/naming.js', 'src/model must not import src/backends'],
    ['model/service-port.ts', '../kube/reflector.js', 'src/model must not import src/kube'],
    ['model/endpoint.ts', '../server/metrics.js', 'src/model must not import src/server'],
    ['model/endpoint.ts', '../cli/main.js', 'src/model must not import src/cli'],
    ['backends/nftables/backend.ts', '../../cli/render.js', 'src/backends/nftables must not import src/cli'],
    [
      'backends/nftables/backend.ts',
      '../iptables/naming.js',
      'src/backends/nftables must not import src/backends/iptables',
    ],
    ['kube/reflector.ts', '../sync/proxier.js', 'src/kube must not import src/sync'],
    ['netfilter/nft/executor.ts', '../../sync/metrics.js', 'src/netfilter must not import src/sync'],
    ['util/clock.ts', '../model/ip.js', 'src/util must not import src/model'],
  ];
  for (const [file, target, message] of forbidden)
    expectOne(`${AGENT}/${file}`, target, `import direction: ${message} `);

  const allowed: ReadonlyArray<readonly [string, string]> = [
    ['model/topology.ts', './endpoint.js'],
    ['model/service-port.ts', '../api/objects.js'],
    ['model/ip.ts', '../util/clock.js'],
    ['sync/proxier.ts', '../model/topology.js'],
    ['backends/nftables/backend.ts', '../../sync/backend.js'],
    ['backends/iptables/render.ts', '../../netfilter/iptables/types.js'],
    ['cli/run.ts', '../sync/proxier.js'],
  ];
  for (const [file, target] of allowed) expectNone(`${AGENT}/${file}`, target);
});

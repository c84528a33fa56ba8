// The import-direction rule in eslint.config.js: a folder of src/ that imports a later stage fails `npm run lint`
// with a message naming the rule. Linted through ESLint's own API with the project's config, as `npm run lint` does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: root });

async function problems(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  assert.ok(result !== undefined);
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('import direction', () => {
  const forbidden: ReadonlyArray<readonly [string, string, string]> = [
    ['src/model/ip.ts', '../sync/proxier.js', 'src/model must not import src/sync'],
    ['src/model/topology.ts', '../backends/nftables/naming.js', 'src/model must not import src/backends'],
    ['src/model/service-port.ts', '../kube/reflector.js', 'src/model must not import src/kube'],
    ['src/model/endpoint.ts', '../server/metrics.js', 'src/model must not import src/server'],
    ['src/model/endpoint.ts', '../cli/main.js', 'src/model must not import src/cli'],
    ['src/model/endpoint.ts', '../lab/cluster/lab.js', 'src/model must not import src/lab'],
    [
      'src/backends/nftables/backend.ts',
      '../../cli/render.js',
      'src/backends/nftables must not import src/cli',
    ],
    [
      'src/backends/iptables/backend.ts',
      '../../lab/cluster/lab.js',
      'src/backends/iptables must not import src/lab',
    ],
    [
      'src/backends/nftables/backend.ts',
      '../iptables/naming.js',
      'src/backends/nftables must not import src/backends/iptables',
    ],
    ['src/kube/reflector.ts', '../sync/proxier.js', 'src/kube must not import src/sync'],
    ['src/netfilter/nft/executor.ts', '../../sync/metrics.js', 'src/netfilter must not import src/sync'],
    ['src/lab/cluster/lab.ts', '../../cli/run.js', 'src/lab must not import src/cli'],
    ['src/util/clock.ts', '../model/ip.js', 'src/util must not import src/model'],
  ];
  for (const [file, target, message] of forbidden) {
    it(`${file} importing ${target} fails with "${message}"`, async () => {
      const found = await problems(file, `import '${target}';\n`);
      assert.equal(found.length, 1, `expected one import-direction error, got ${JSON.stringify(found)}`);
      assert.match(found[0] ?? '', new RegExp(`import direction: ${message} `));
    });
  }

  const allowed: ReadonlyArray<readonly [string, string]> = [
    ['src/model/topology.ts', './endpoint.js'],
    ['src/model/service-port.ts', '../api/objects.js'],
    ['src/model/ip.ts', '../util/clock.js'],
    ['src/sync/proxier.ts', '../model/topology.js'],
    ['src/backends/nftables/backend.ts', '../../sync/backend.js'],
    ['src/backends/iptables/render.ts', '../../netfilter/iptables/types.js'],
    ['src/cli/lab.ts', '../lab/cluster/index.js'],
  ];
  for (const [file, target] of allowed) {
    it(`${file} may import ${target}`, async () => {
      assert.deepEqual(await problems(file, `import '${target}';\n`), []);
    });
  }
});

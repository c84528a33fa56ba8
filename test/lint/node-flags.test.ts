// The agent's V8 flags are decided once (packages/agent/src/util/node-flags.ts); the two places that cannot import it, the CLI's
// shebang line and the image's wrapper script, must carry the same flags, or what runs on a node is not what the
// bench measured.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { AGENT_NODE_FLAGS } from '../../packages/agent/src/util/node-flags.js';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the agent V8 flags', () => {
  test('the CLI shebang runs node with exactly AGENT_NODE_FLAGS', () => {
    const first = read('packages/agent/src/cli/main.ts').split('\n')[0] ?? '';
    assert.equal(first, `#!/usr/bin/env -S node ${AGENT_NODE_FLAGS.join(' ')}`);
  });

  test("the image's wrapper runs node with exactly AGENT_NODE_FLAGS", () => {
    const wrapper = read('scripts/image.sh')
      .split('\n')
      .find((l) => l.startsWith('exec /usr/local/bin/node'));
    assert.ok(wrapper !== undefined, 'no node wrapper in scripts/image.sh');
    const flags = /exec \/usr\/local\/bin\/node (.*?) \/opt\//.exec(wrapper)?.[1];
    assert.equal(flags, AGENT_NODE_FLAGS.join(' '));
  });
});

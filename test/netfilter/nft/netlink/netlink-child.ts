// Run by kernel.test.ts as `ip netns exec NS node --import tsx test/netfilter/nft/netlink/netlink-child.ts`: this
// process lives inside the test's namespace, so the netlink socket it opens (whose namespace is this process's)
// writes that namespace's tables and nothing else. Runs the scenario with the netlink writer, then lists every set
// and map both through netlink and through `nft --json` (parsed by our JSON reader), and prints one JSON line.
import { hostCommandRunner } from '../../../../packages/agent/src/netfilter/command.js';
import { parseElementsJson } from '../../../../packages/agent/src/netfilter/nft/json.js';
import type {
  ListedElement,
  NetlinkElementError,
} from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import { NetlinkElements } from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import { runScenario } from './scenario.js';

const writer = NetlinkElements.open();
if ('error' in writer) {
  process.stdout.write(JSON.stringify({ error: writer.error }) + '\n');
  process.exit(2);
}

const errors: NetlinkElementError[] = [];
const { records, families } = await runScenario(async (ref, ops, schemas) => {
  const r = await writer.apply(ref, ops, schemas);
  if (r.ok) return { ok: true };
  errors.push(r.error);
  return { code: r.error.code, ...(r.error.index !== undefined ? { index: r.error.index } : {}) };
}, hostCommandRunner);

const byKey = (a: ListedElement, b: ListedElement): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
const listings: { set: string; netlink: unknown; json: unknown }[] = [];
for (const { ref, schemas } of families) {
  for (const [set, schema] of schemas) {
    if (set === 'no-such-set') continue;
    const listed = await writer.list(ref, set, schema);
    const r = await hostCommandRunner.run('nft', [
      '--json',
      'list',
      schema.container,
      ref.family,
      ref.table,
      set,
    ]);
    const parsed = r.code === 0 ? parseElementsJson(r.stdout, set) : `nft: ${r.stderr}`;
    listings.push({
      set: `${ref.family} ${set}`,
      netlink: listed.ok ? listed.elements.sort(byKey) : listed.error,
      json:
        typeof parsed === 'string'
          ? parsed
          : parsed
              .map((e): ListedElement => ({
                key: e.key.join(' . '),
                ...(e.value !== undefined ? { value: e.value.join(' . ') } : {}),
                ...(e.comment !== undefined ? { comment: e.comment } : {}),
              }))
              .sort(byKey),
    });
  }
  // A set that does not exist: an error value naming the kernel's errno, not an exception.
  const schema = schemas.get('cluster-ips');
  if (schema) {
    const missing = await writer.list(ref, 'no-such-set', schema);
    listings.push({
      set: `${ref.family} no-such-set`,
      netlink: missing.ok ? missing.elements : missing.error,
      json: null,
    });
  }
}
// Text that is not what the schema says is refused before anything is sent.
const first = families[0];
const invalid =
  first &&
  (await writer.apply(
    first.ref,
    [
      { verb: 'add', object: { kind: 'element', set: 'cluster-ips', key: ['198.18.250.1'] } },
      { verb: 'add', object: { kind: 'element', set: 'cluster-ips', key: ['198.18.250.256'] } },
    ],
    first.schemas,
  ));
writer.close();
process.stdout.write(JSON.stringify({ records, errors, listings, invalid }) + '\n');

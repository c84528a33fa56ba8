// Run by generation-kernel.test.ts inside its namespace: reads the ruleset's generation over netlink around nft
// commands (a commit, a listing, a refused transaction) and prints the readings as one JSON line.
import { hostCommandRunner } from '../../../../packages/agent/src/netfilter/command.js';
import { NetlinkElements } from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';

const opened = NetlinkElements.open();
if ('error' in opened) {
  process.stdout.write(JSON.stringify({ error: opened.error }) + '\n');
  process.exit(2);
}
const netlink: NetlinkElements = opened;

async function generation(): Promise<number> {
  const r = await netlink.generation();
  if (!r.ok) throw new Error(r.error.message);
  return r.id;
}

async function nft(text: string): Promise<number> {
  return (await hostCommandRunner.run('nft', ['-f', '-'], { stdin: text })).code;
}

const readings: Record<string, number> = {};
readings.start = await generation();
readings.again = await generation();
await nft('add table ip kpts-generation\n');
readings.afterCommit = await generation();
await hostCommandRunner.run('nft', ['list', 'ruleset']);
readings.afterListing = await generation();
readings.refusedCode = await nft(
  'add chain ip kpts-generation c\nadd rule ip kpts-generation no-such-chain accept\n',
);
readings.afterRefused = await generation();
await nft('add chain ip kpts-generation c\nadd chain ip kpts-generation d\n');
readings.afterTwoChainsInOne = await generation();
netlink.close();
process.stdout.write(JSON.stringify(readings) + '\n');

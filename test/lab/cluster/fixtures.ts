// A lab's state file as the cluster tests write and read it back: two nodes, nftables mode, no live process.
import type { LabState } from '../../../packages/lab/src/cluster/state.js';

export function labState(prefix: string): LabState {
  return {
    version: 1,
    pid: 1234,
    prefix,
    nodes: ['control-plane', 'worker'],
    mode: 'nftables',
    startedAt: '2026-01-01T00:00:00Z',
    apiserverURL: 'https://127.0.0.1:1',
    token: 't',
    caPem: '',
  };
}

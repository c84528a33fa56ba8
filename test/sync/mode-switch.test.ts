// OtherModeCleanup: the other mode's rules go only after every family's first successful full sync, once.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OtherModeCleanup } from '../../packages/agent/src/sync/mode-switch.js';

describe('OtherModeCleanup', () => {
  test('waits for a successful full sync of every family, then cleans once', async () => {
    let runs = 0;
    const c = new OtherModeCleanup(['IPv4', 'IPv6'], async () => void runs++);
    c.onSync({ family: 'IPv4', ok: false, full: true });
    c.onSync({ family: 'IPv4', ok: true, full: false });
    assert.equal(c.cleaned, false, 'a failed or partial sync is not enough');
    c.onSync({ family: 'IPv4', ok: true, full: true });
    assert.equal(c.cleaned, false, 'IPv6 has not synced yet');
    c.onSync({ family: 'IPv6', ok: true, full: true });
    assert.equal(c.cleaned, true);
    await c.done;
    c.onSync({ family: 'IPv6', ok: true, full: true });
    c.onSync({ family: 'IPv4', ok: true, full: true });
    await new Promise((r) => setImmediate(r));
    assert.equal(runs, 1, 'later syncs never clean again');
  });

  test('never cleans while no sync succeeds (an unreachable API server never lets the first sync run)', async () => {
    let runs = 0;
    const c = new OtherModeCleanup(['IPv4'], async () => void runs++);
    for (let i = 0; i < 5; i++) c.onSync({ family: 'IPv4', ok: false, full: true });
    assert.equal(c.cleaned, false);
    assert.equal(runs, 0);
  });

  test('a failing cleanup still settles', async () => {
    const c = new OtherModeCleanup(['IPv4'], () => Promise.reject(new Error('nft: boom')));
    c.onSync({ family: 'IPv4', ok: true, full: true });
    await c.done;
    assert.equal(c.cleaned, true);
  });
});

// An example of unit-testing your own settings before they reach a cluster: the settings file is
// the one you deploy, the verdicts are the Kubewarden build's, and `npm test` runs it.
//
// In your own repository: `npm install --save-dev taintguard` (here it links the local build).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { evaluate, validateSettings } from 'taintguard';

const POLICY = 'taint-preservation';
const settings = JSON.parse(readFileSync(new URL('./taint-preservation.settings.json', import.meta.url)));

const GPU = { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' };
const MAINTENANCE = { key: 'example.com/maintenance', effect: 'NoExecute' };

/** An AdmissionRequest for an update of node `n1` by `username` from one taint list to another. */
function taintUpdate({ username, groups = [], before, after }) {
  const node = (taints) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { taints } });
  return {
    uid: 'test',
    kind: { group: '', version: 'v1', kind: 'Node' },
    name: 'n1',
    operation: 'UPDATE',
    userInfo: { username, groups },
    oldObject: node(before),
    object: node(after),
  };
}

test('the settings are valid', () => {
  assert.deepEqual(validateSettings(POLICY, settings), { valid: true });
});

// Table-driven: who removes which taint, and whether the taint survives.
const removals = [
  { who: 'the GPU operator, for the GPU taint', username: 'system:serviceaccount:gpu-operator:driver-manager', taint: GPU, kept: false },
  { who: 'another controller, for the GPU taint', username: 'system:serviceaccount:kube-system:node-controller', taint: GPU, kept: true },
  { who: 'the GPU operator, for a maintenance taint', username: 'system:serviceaccount:gpu-operator:driver-manager', taint: MAINTENANCE, kept: true },
  { who: 'the platform team', username: 'oidc:bob', groups: ['oidc:platform-team'], taint: MAINTENANCE, kept: false },
];

for (const { who, username, groups, taint, kept } of removals) {
  test(`removal by ${who}: ${kept ? 'restored' : 'allowed'}`, () => {
    const verdict = evaluate(POLICY, taintUpdate({ username, groups, before: [taint], after: [] }), settings);
    assert.equal(verdict.accepted, true);
    if (kept) {
      // The webhook puts the taint back, and says so.
      assert.deepEqual(verdict.patch, [{ op: 'add', path: '/spec/taints/0', value: taint }]);
      assert.equal(verdict.warnings.length, 1);
    } else {
      assert.equal(verdict.patch, null);
    }
  });
}

test('deny mode rejects instead of restoring', () => {
  const request = taintUpdate({ username: 'system:serviceaccount:kube-system:node-controller', before: [GPU], after: [] });
  const verdict = evaluate(POLICY, request, { ...settings, mode: 'deny' });
  assert.equal(verdict.accepted, false);
  assert.equal(verdict.code, 403);
  assert.match(verdict.message, /nvidia\.com\/gpu/);
});

test('a typo in the settings is caught, naming the field', () => {
  const typo = { ...settings, protectedTaint: [] };
  const result = validateSettings(POLICY, typo);
  assert.equal(result.valid, false);
  assert.match(result.message, /protectedTaint/);
  assert.throws(() => evaluate(POLICY, taintUpdate({ username: 'x', before: [], after: [] }), typo),
    /invalid settings/);
});

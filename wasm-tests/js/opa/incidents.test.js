// The incidents the policies exist for, in Gatekeeper's terms: what restore mode would repair,
// or a restriction would refuse, is a violation; what only a mutation could add is not.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');
const { gatekeeperWasm, example, settings, violationsOf, wapcVerdicts } = require('./helpers');

const cases = [
  // [policy, request, settings, words every violation message must contain; [] = allowed]
  ['taint-preservation', 'incident-1-stale-taint-patch', 'default', ['node-controller', 'may not remove protected taint example.com/dedicated=gpu:NoSchedule']],
  ['taint-preservation', 'incident-2-uncordon-by-other-controller', 'default', ['may not uncordon node worker-1', 'alice@example.com']],
  ['taint-preservation', 'incident-3-readd-uninitialized', 'default', ['may not re-add one-shot startup taint node.cloudprovider.kubernetes.io/uninitialized']],
  ['taint-preservation', 'incident-1-stale-taint-patch', 'gpu-fleet', ['example.com/dedicated']],
  // Restore mode would only record the cordon owner: nothing to deny.
  ['taint-preservation', 'person-cordons', 'default', []],
  ['taint-preservation', 'admin-uncordons', 'default', []],
  ['toleration-injection', 'tenant-pod-tolerating-dedicated', 'tenant-restriction', ['may not tolerate dedicated=gpu:NoSchedule', 'dedicated-nodes']],
  ['toleration-injection', 'tenant-pod-tolerating-everything', 'tenant-restriction', ['may not tolerate *:* (Exists)']],
  // Tolerations the mutating half would add are not violations.
  ['toleration-injection', 'flannel-v0.24.4-daemonset', 'default', []],
  ['toleration-injection', 'hostpath-helper-pod', 'hostpath-provisioner', []],
];

test('incident cases: same verdicts as the waPC build in deny mode', async () => {
  const loaded = {};
  for (const [policy, request, settingsName, words] of cases) {
    loaded[policy] ??= await loadPolicy(gatekeeperWasm(policy));
    const name = `${policy} ${request} [${settingsName}]`;
    const resultSet = loaded[policy].evaluate({
      parameters: settings(policy, settingsName),
      review: example(policy, request),
    });
    const violations = violationsOf(assert, resultSet);
    assert.equal(violations.length, words.length ? 1 : 0, `${name}: ${JSON.stringify(resultSet)}`);
    for (const word of words) assert.ok(violations[0].msg.includes(word), `${name}: ${word}`);
    const wapc = wapcVerdicts().find(
      (c) => c.policy === policy && c.request === request && c.settings === settingsName,
    );
    assert.equal(violations.length === 0, wapc.accepted, name);
    if (violations.length) assert.equal(violations[0].msg, wapc.message, name);
  }
});

// The gatekeeper build cannot inject (incidents 4 and 5 need the waPC build); in OPA mode it says
// so for every rule that matches, and never claims an added toleration.
test('OPA mode warns that matching rules inject nothing', async () => {
  const sdk = await loadPolicy(gatekeeperWasm('toleration-injection'));
  const warned = [
    // [request, settings, the rules that match]
    ['hostpath-helper-pod', 'hostpath-provisioner', ['hostpath-provisioner-helpers']],
    ['hostpath-helper-pod-other-namespace', 'hostpath-provisioner', []],
    ['flannel-v0.24.4-daemonset', 'default', []],
  ];
  for (const [request, settingsName, rules] of warned) {
    sdk.setData(settings('toleration-injection', settingsName));
    const { response } = sdk.evaluate({ request: example('toleration-injection', request) }, 'policy/main')[0].result;
    const name = `${request} [${settingsName}]`;
    assert.equal(response.allowed, true, name);
    assert.equal(response.auditAnnotations, undefined, `${name}: nothing was injected`);
    const expected = rules.map(
      (rule) => `toleration-injection: rule "${rule}" matches, but this engine cannot mutate: no toleration is injected (the Kubewarden waPC build injects them)`,
    );
    assert.deepEqual(response.warnings ?? [], expected, name);
  }
});

// toleration-injection's gatekeeper build in the OPA SDK and burrego's call sequence, with
// podTolerationRestriction on: the Pod's Namespace comes from the data document's inventory
// (data.inventory.cluster.v1.Namespace). Where the inventory holds no Namespaces at all, or data
// that cannot be read as one, or not the Pod's, the Pod is refused (500), naming what replicates
// them; it is never judged by the cluster-wide whitelist alone, which team-a's narrower whitelist
// overrides (docs/context.md, "When the cluster cannot answer"). OPA mode passes no inventory
// and refuses too.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');
const { gatekeeperWasm, violationsOf, burregoHost } = require('./helpers');

const POLICY = 'toleration-injection';
const parameters = {
  podTolerationRestriction: { enabled: true, whitelist: [{ key: 'dedicated', operator: 'Exists' }] },
};
const teamA = {
  apiVersion: 'v1', kind: 'Namespace',
  metadata: {
    name: 'team-a',
    annotations: {
      'scheduler.alpha.kubernetes.io/tolerationsWhitelist': '[{"key":"dedicated","operator":"Equal","value":"team-a"}]',
    },
  },
};
const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'w1' } };

/** A BestEffort Pod of team-a tolerating `dedicated=team-b`: its namespace's whitelist refuses it. */
const review = {
  uid: 'u1', kind: { group: '', version: 'v1', kind: 'Pod' },
  resource: { group: '', version: 'v1', resource: 'pods' },
  name: 'web-1', namespace: 'team-a', operation: 'CREATE',
  userInfo: { username: 'system:serviceaccount:team-a:deployer', groups: ['system:serviceaccounts'] },
  object: {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', namespace: 'team-a' },
    spec: {
      containers: [{ name: 'web', image: 'nginx:1.27' }],
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'team-b', effect: 'NoSchedule' }],
    },
  },
};

const inventory = (v1) => ({ inventory: { cluster: { v1 }, namespace: {} } });
const SYNC = [/`Config`/, /kind: Namespace\}/, /v1\/Namespace in the policy's contextAwareResources/];
const unread = (why) => ({ code: 500, message: [/annotations of namespace "team-a" cannot be read/, why, ...SYNC] });

const cases = [
  // [what, the data document, the violation: code and what its message says]
  ['no data document', {}, unread(/has no inventory/)],
  ['an inventory of nothing', { inventory: { cluster: {}, namespace: {} } }, unread(/holds no v1\/Namespace objects/)],
  ['Nodes but no Namespaces', inventory({ Node: { w1: node } }), unread(/holds no v1\/Namespace objects/)],
  ['Namespaces listed empty', inventory({ Namespace: {}, Node: { w1: node } }), unread(/holds no v1\/Namespace objects/)],
  ['an inventory that is not one', { inventory: 'synced' }, unread(/inventory cannot be read/)],
  ['a cluster that is not an object', { inventory: { cluster: [] } }, unread(/inventory cannot be read/)],
  ['Namespaces, but not team-a', inventory({ Namespace: { 'team-b': { metadata: { name: 'team-b' } } } }),
    { code: 500, message: [/holds no v1\/Namespace "team-a"/] }],
  ['team-a: its whitelist decides', inventory({ Namespace: { 'team-a': teamA } }),
    { code: 403, message: [/conflict with its namespace whitelist/] }],
];

test(`${POLICY}: without the Pod's Namespace in the inventory, every host refuses the Pod`, async () => {
  const wasm = gatekeeperWasm(POLICY);
  const fast = await loadPolicy(wasm);
  const legacy = await loadPolicy(wasm);
  legacy.minorVersion = 1;
  const burrego = burregoHost(wasm);
  const input = { parameters, review };
  for (const [what, data, want] of cases) {
    fast.setData(data);
    legacy.setData(data);
    const runs = {
      'SDK opa_eval': fast.evaluate(input),
      'SDK context calls': legacy.evaluate(input),
      'burrego sequence': burrego.evaluate(0, input, data),
    };
    for (const [host, resultSet] of Object.entries(runs)) {
      const violations = violationsOf(assert, resultSet);
      assert.equal(violations.length, 1, `${what} via ${host}: ${JSON.stringify(violations)}`);
      assert.deepEqual(violations[0].details, { policy: POLICY, code: want.code }, `${what} via ${host}`);
      for (const fragment of want.message) assert.match(violations[0].msg, fragment, `${what} via ${host}`);
    }
  }
  assert.deepEqual(burrego.aborts, []);
});

test(`${POLICY}: OPA mode passes no inventory, and refuses the Pod saying where to run it`, async () => {
  const sdk = await loadPolicy(gatekeeperWasm(POLICY));
  sdk.setData(parameters);
  const [{ result: { response } }] = sdk.evaluate({ request: review }, 'policy/main');
  assert.equal(response.allowed, false);
  assert.equal(response.status.code, 500);
  assert.match(response.status.message, /reads no inventory: run the policy\/violation entrypoint/);
  assert.match(response.status.message, /`Config` syncs/);
});

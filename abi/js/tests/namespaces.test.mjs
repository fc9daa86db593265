// PodTolerationRestriction without the Pod's Namespace: the package, like the Kubewarden build
// and the gatekeeper build whose inventory holds no Namespaces, refuses the Pod (500) rather than
// judge it by the cluster-wide whitelist alone, which team-a's narrower whitelist overrides
// (docs/context.md, "When the cluster cannot answer"). With the Namespace, the namespace's
// whitelist decides.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { evaluate } from 'taintguard';

const settings = {
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

/** A BestEffort Pod of team-a tolerating `dedicated=<value>`, created by a tenant. */
function review(value) {
  const object = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', namespace: 'team-a' },
    spec: {
      containers: [{ name: 'web', image: 'nginx:1.27' }],
      tolerations: [{ key: 'dedicated', operator: 'Equal', value, effect: 'NoSchedule' }],
    },
  };
  return {
    uid: 'u1', kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    name: 'web-1', namespace: 'team-a', operation: 'CREATE',
    userInfo: { username: 'system:serviceaccount:team-a:deployer', groups: ['system:serviceaccounts'] },
    object,
  };
}

const unread = { accepted: false, code: 500, message: /annotations of namespace "team-a" cannot be read/ };

const cases = [
  // [what, cluster (undefined: not passed), the toleration's value, what the package answers]
  ['no cluster given', undefined, 'team-b', unread],
  ['cluster null', null, 'team-b', unread],
  ['a cluster without namespaces', {}, 'team-b', unread],
  ['nodes but no namespaces', { nodes: [{ apiVersion: 'v1', kind: 'Node', metadata: { name: 'w1' } }] }, 'team-b', unread],
  ['namespaces, but not the Pod\'s', { namespaces: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b' } }] }, 'team-b', unread],
  ['no namespaces, a Pod the namespace would admit', {}, 'team-a', unread],
  ['its namespace: the namespace whitelist refuses', { namespaces: [teamA] }, 'team-b',
    { accepted: false, code: 403, message: /conflict with its namespace whitelist/ }],
  ['its namespace: the namespace whitelist admits', { namespaces: [teamA] }, 'team-a', { accepted: true, code: null }],
];

for (const [what, cluster, value, want] of cases) {
  test(`podTolerationRestriction, ${what}`, () => {
    const args = ['toleration-injection', review(value), settings];
    if (cluster !== undefined) args.push(cluster);
    const verdict = evaluate(...args);
    assert.equal(verdict.accepted, want.accepted, JSON.stringify(verdict));
    assert.equal(verdict.code, want.code, JSON.stringify(verdict));
    if (want.message) assert.match(verdict.message, want.message);
    assert.equal(verdict.patch, null);
  });
}

test('the no-namespaces suite passes through the package, every case run', () => {
  const bin = fileURLToPath(new URL('../../../dist/js/bin/taintguard.js', import.meta.url));
  const suite = 'policies/toleration-injection/examples/pod-toleration-restriction/no-namespaces.yml';
  const run = spawnSync(process.execPath, [bin, 'test', suite],
    { cwd: fileURLToPath(new URL('../../../', import.meta.url)), encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /^6 passed, 0 failed$/m);
});

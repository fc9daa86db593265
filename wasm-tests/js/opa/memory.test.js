// Memory over time on one instance, large inputs, and settings through setData. Measurements are
// printed as test diagnostics.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');
const h = require('./helpers');

const EVALUATIONS = 10000;
const MiB = 1 << 20;

for (const policy of h.policies) {
  test(`${policy}: ${EVALUATIONS} evaluations on one instance do not grow memory`, async (t) => {
    const cases = h.wapcVerdicts().filter((c) => c.policy === policy);
    const fast = await loadPolicy(h.gatekeeperWasm(policy));
    const legacy = await loadPolicy(h.gatekeeperWasm(policy));
    legacy.minorVersion = 1;
    for (const [path, sdk] of [['opa_eval', fast], ['context calls', legacy]]) {
      const run = (c, i) => {
        // Alternate the two entrypoints; OPA mode takes the settings as data.
        if (i % 2 === 0) return h.violationsOf(assert, sdk.evaluate({ parameters: c.parameters, review: c.review })).length === 0;
        sdk.setData(c.parameters);
        return sdk.evaluate({ request: c.review }, 'policy/main')[0].result.response.allowed;
      };
      // Every fixture once, the largest included: whatever memory that takes is the ceiling.
      cases.forEach((c, i) => run(c, i));
      cases.forEach((c, i) => run(c, i + 1));
      const ceiling = sdk.mem.buffer.byteLength;
      const started = process.hrtime.bigint();
      for (let i = 0; i < EVALUATIONS; i += 1) {
        const c = cases[i % cases.length];
        assert.equal(run(c, i), c.accepted, `${c.request} [${c.settings}] at evaluation ${i}`);
      }
      const micros = Number(process.hrtime.bigint() - started) / 1000 / EVALUATIONS;
      assert.equal(sdk.mem.buffer.byteLength, ceiling, `memory grew during ${EVALUATIONS} evaluations`);
      t.diagnostic(`${path}: ${ceiling / h.PAGE} pages after ${EVALUATIONS} evaluations, ${micros.toFixed(0)} µs each`);
    }
  });
}

// A Node update padded to `size` bytes with an annotation on both objects (a Node with a long
// image list or big annotations is what makes real requests large).
function padded(review, size) {
  const withPad = (length) => {
    const copy = JSON.parse(JSON.stringify(review));
    for (const key of ['object', 'oldObject']) {
      copy[key].metadata.annotations = { ...copy[key].metadata.annotations, 'example.com/padding': 'x'.repeat(length) };
    }
    return copy;
  };
  const overhead = Buffer.byteLength(JSON.stringify({ parameters: {}, review: withPad(0) }));
  return withPad(Math.ceil((size - overhead) / 2));
}

test('a 1 MiB input gets the same verdict as the small one, in every host path', async (t) => {
  const policy = 'taint-preservation';
  const cases = [
    ['incident-1-stale-taint-patch', false],
    ['admin-uncordons', true],
  ];
  const fast = await loadPolicy(h.gatekeeperWasm(policy));
  const legacy = await loadPolicy(h.gatekeeperWasm(policy));
  legacy.minorVersion = 1;
  const burrego = h.burregoHost(h.gatekeeperWasm(policy));
  for (const [request, allowed] of cases) {
    const small = { parameters: {}, review: h.example(policy, request) };
    const big = { parameters: {}, review: padded(small.review, MiB) };
    const bytes = Buffer.byteLength(JSON.stringify(big));
    assert.ok(bytes >= MiB && bytes < MiB + 4096, `input is ${bytes} bytes`);
    const want = fast.evaluate(small);
    assert.equal(h.violationsOf(assert, want).length === 0, allowed, request);
    const runs = [
      ['SDK opa_eval', fast, () => fast.evaluate(big)],
      ['SDK context calls', legacy, () => legacy.evaluate(big)],
      ['burrego sequence', burrego, () => burrego.evaluate(0, big)],
    ];
    for (const [path, host, run] of runs) {
      assert.deepEqual(run(), want, `${request} via ${path}`);
      const pages = (host.mem ?? host.memory).buffer.byteLength / h.PAGE;
      t.diagnostic(`${request} (${bytes} bytes) via ${path}: ${allowed ? 'allowed' : 'violation'}, memory ${pages} pages`);
      // After the large input, small ones still work on the same instance.
      assert.deepEqual(path === 'burrego sequence' ? burrego.evaluate(0, small) : host.evaluate(small), want);
    }
  }
  assert.deepEqual(burrego.aborts, []);
});

test('OPA mode reads its settings from setData', async () => {
  const cases = [
    // [policy, request, data, allowed, words in the message]
    ['toleration-injection', 'tenant-pod-tolerating-dedicated', {}, true, ''],
    ['toleration-injection', 'tenant-pod-tolerating-dedicated', h.settings('toleration-injection', 'tenant-restriction'), false, 'dedicated-nodes'],
    // Kubewarden adds the cluster inventory of context-aware policies under `kubernetes`.
    ['toleration-injection', 'tenant-pod-tolerating-dedicated', { ...h.settings('toleration-injection', 'tenant-restriction'), kubernetes: { namespaces: [] } }, false, 'dedicated-nodes'],
    ['toleration-injection', 'tenant-pod-tolerating-dedicated', {}, true, ''],
    ['taint-preservation', 'admin-removes-protected-taint', {}, true, ''],
    ['taint-preservation', 'admin-removes-protected-taint', { permitted: { people: false, groups: [] } }, false, 'may not remove protected taint'],
    ['taint-preservation', 'admin-uncordons', { mode: 'bogus' }, false, 'unknown mode "bogus"'],
    ['taint-preservation', 'admin-uncordons', { mdoe: 'deny' }, false, 'mdoe'],
  ];
  const loaded = {};
  for (const [policy, request, data, allowed, words] of cases) {
    loaded[policy] ??= await loadPolicy(h.gatekeeperWasm(policy));
    const sdk = loaded[policy];
    const name = `${policy} ${request} with data ${JSON.stringify(data).slice(0, 80)}`;
    sdk.setData(data);
    const { response } = sdk.evaluate({ request: h.example(policy, request) }, 'policy/main')[0].result;
    assert.equal(response.allowed, allowed, `${name}: ${JSON.stringify(response)}`);
    if (!allowed) assert.ok(response.status.message.includes(words), `${name}: ${response.status.message}`);
    // The gatekeeper entrypoint takes its settings from the input and ignores data.
    const gatekeeper = sdk.evaluate({ parameters: {}, review: h.example(policy, request) });
    assert.ok(Array.isArray(gatekeeper[0].result));
  }
});

// Nothing outlives an evaluation but the heap resets decide what does: small and large settings
// (the large ones span many heap pages), alternated on one instance in every host path, must
// judge as a fresh instance does.
test('small and large settings alternated on one instance judge as fresh ones', async () => {
  const policy = 'toleration-injection';
  const small = h.settings(policy, 'tenant-restriction');
  const filler = Array.from({ length: 400 }, (_, i) => ({
    name: `unmatched-${i}`,
    match: { namespaces: [`nowhere-${i}`], kinds: ['Deployment'] },
    tolerations: [{ key: `example.com/filler-${i}`, operator: 'Exists', effect: 'NoSchedule' }],
  }));
  const large = { ...small, rules: [...(small.rules ?? []), ...filler] };
  assert.ok(Buffer.byteLength(JSON.stringify(large)) > 32 * 1024, 'large settings');
  const requests = ['tenant-pod-tolerating-dedicated', 'pod-with-unrelated-tolerations'];
  const wasm = h.gatekeeperWasm(policy);
  const expected = async (parameters, review) => (await loadPolicy(wasm)).evaluate({ parameters, review });
  const fast = await loadPolicy(wasm);
  const legacy = await loadPolicy(wasm);
  legacy.minorVersion = 1;
  const burrego = h.burregoHost(wasm);
  const hosts = [
    ['SDK opa_eval', (input) => fast.evaluate(input)],
    ['SDK context calls', (input) => legacy.evaluate(input)],
    ['burrego sequence', (input) => burrego.evaluate(0, input)],
  ];
  const order = [small, small, large, large, small, large, small, small];
  for (const request of requests) {
    const review = h.example(policy, request);
    const want = new Map([[small, await expected(small, review)], [large, await expected(large, review)]]);
    assert.deepEqual(want.get(small), want.get(large), `${request}: the filler rules match nothing`);
    for (const [path, evaluate] of hosts) {
      order.forEach((parameters, i) => {
        const which = parameters === small ? 'small' : 'large';
        assert.deepEqual(evaluate({ parameters, review }), want.get(parameters), `${request} via ${path}, evaluation ${i} (${which} settings)`);
      });
    }
  }
  assert.deepEqual(burrego.aborts, []);
});

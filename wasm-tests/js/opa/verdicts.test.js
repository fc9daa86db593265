// Every example request x settings pairing of every policy, through every way a host runs the
// gatekeeper artifact, against the verdict of the real waPC build in deny mode.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');
const { policies, gatekeeperWasm, wapcVerdicts, violationsOf, burregoHost } = require('./helpers');

for (const policy of policies) {
  test(`${policy}: every shared fixture gets the waPC build's deny-mode verdict`, async () => {
    const cases = wapcVerdicts().filter((c) => c.policy === policy);
    assert.ok(cases.length >= 10, `only ${cases.length} fixtures for ${policy}`);
    const wasm = gatekeeperWasm(policy);
    const fast = await loadPolicy(wasm);
    assert.equal(fast.minorVersion, 2, 'the SDK takes the opa_eval path');
    // The SDK picks its ABI 1.1 path (opa_eval_ctx_* + eval) from this field; forcing it covers
    // the call sequence OPA modules without opa_eval get.
    const legacy = await loadPolicy(wasm);
    legacy.minorVersion = 1;
    const burrego = burregoHost(wasm);

    let rejected = 0;
    for (const c of cases) {
      const name = `${c.request} [${c.settings}]`;
      const want = c.accepted ? 'allowed' : c.message;
      const gatekeeperInput = { parameters: c.parameters, review: c.review };
      const runs = {
        'SDK opa_eval': fast.evaluate(gatekeeperInput),
        'SDK context calls': legacy.evaluate(gatekeeperInput),
        'burrego sequence': burrego.evaluate(0, gatekeeperInput),
      };
      for (const [path, resultSet] of Object.entries(runs)) {
        const violations = violationsOf(assert, resultSet);
        const got = violations.length === 0 ? 'allowed' : violations.map((v) => v.msg).join(', ');
        assert.equal(got, want, `${name} via ${path}`);
        if (!c.accepted) {
          assert.equal(violations.length, 1, `${name} via ${path}`);
          assert.deepEqual(violations[0].details, { policy, code: c.code }, `${name} via ${path}`);
        }
      }

      // OPA mode: the settings are the data document.
      for (const [path, sdk] of [['SDK opa_eval', fast], ['SDK context calls', legacy]]) {
        sdk.setData(c.parameters);
        const resultSet = sdk.evaluate({ request: c.review }, 'policy/main');
        assert.equal(resultSet.length, 1, `${name} via ${path}`);
        const { response } = resultSet[0].result;
        assert.equal(response.uid, c.review.uid, `${name} via ${path}`);
        assert.equal(response.allowed, c.accepted, `${name} via ${path}`);
        if (!c.accepted) {
          assert.deepEqual(response.status, { message: c.message, code: c.code }, `${name} via ${path}`);
        }
      }
      rejected += c.accepted ? 0 : 1;
    }
    assert.deepEqual(burrego.aborts, []);
    assert.ok(rejected > 0, `no fixture of ${policy} is rejected: the comparison proves little`);
  });
}

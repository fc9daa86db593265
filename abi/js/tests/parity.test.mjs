// The npm package against the Kubewarden (waPC) build on every example of every policy: each
// example request with each example settings file. The waPC side is the real module run by
// wasmtime as policy-server runs it, written by `wapc-example-verdicts` (./build.sh test runs it
// first; TAINTGUARD_WAPC_VERDICTS overrides the path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { evaluate, policies } from 'taintguard';

const path = process.env.TAINTGUARD_WAPC_VERDICTS ??
  fileURLToPath(new URL('../../../target/js-tests/wapc-verdicts.json', import.meta.url));
const fixtures = JSON.parse(readFileSync(path, 'utf8'));

/** The waPC answer in the package's shape: absent keys are null, [] or {} in the package. */
function expected({ response, admissionResponse }) {
  return {
    accepted: response.accepted,
    message: response.message ?? null,
    code: response.code ?? null,
    warnings: response.warnings ?? [],
    auditAnnotations: response.audit_annotations ?? {},
    mutatedObject: response.mutated_object ?? null,
    patch: admissionResponse.patch ?? null,
    patchType: admissionResponse.patchType ?? null,
  };
}

test('every policy in the package has waPC fixtures of each outcome', () => {
  for (const { name } of policies()) {
    const mine = fixtures.filter((f) => f.policy === name);
    assert.ok(mine.length >= 10, `${name}: ${mine.length} fixtures`);
    assert.ok(mine.some((f) => f.admissionResponse.patch), `${name}: no mutation among its fixtures`);
    assert.ok(mine.some((f) => !f.response.accepted), `${name}: no rejection among its fixtures`);
  }
});

for (const fixture of fixtures) {
  test(`${fixture.policy}: ${fixture.request} with ${fixture.settings}`, () => {
    const verdict = evaluate(fixture.policy, fixture.input, fixture.settingsValue);
    assert.deepStrictEqual(verdict, expected(fixture));
  });
}

// The limit cases of wasm-tests/src/limits.rs (1.5 MiB Nodes, pod templates of ~20,000
// tolerations, JSON nested up to 10,000 levels deep) in the npm package: each gets the full
// policy's verdict or, where the waPC build rejects the input as malformed (400: JSON the policy
// must decode, or hand back mutated, nested past serde_json's 127 levels; half a surrogate pair),
// the documented Error naming the recursion limit or the unpaired surrogate; never a wasm trap
// (WebAssembly.RuntimeError) nor a message that blames the policy. Time is printed as a
// diagnostic, never asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { evaluate } from 'taintguard';

const bin = fileURLToPath(new URL('../../../target/debug/limit-cases', import.meta.url));
const lines = execFileSync(bin, { maxBuffer: 256 << 20 }).toString().split('\n');

const outcome = (v) => (!v.accepted ? 'rejected' : v.mutatedObject ? 'mutated' : 'accepted');

for (let i = 0; i + 2 < lines.length; i += 3) {
  const c = JSON.parse(lines[i]);
  const [request, settings] = [lines[i + 1], lines[i + 2]];
  test(`${c.policy}: ${c.name}`, (t) => {
    const started = process.hrtime.bigint();
    let answer;
    try {
      answer = outcome(evaluate(c.policy, request, settings));
      assert.equal(answer, c.expect);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      assert.ok(!(e instanceof WebAssembly.RuntimeError), `trapped: ${e}`);
      assert.equal(c.expect, 'rejected', `throws where the waPC build answers: ${e.message}`);
      // The recursion limit, or JSON policy-server cannot read (half a surrogate pair).
      assert.match(e.message, /recursion limit|unpaired surrogate/, e.message);
      assert.doesNotMatch(e.message, /internal error|not JSON/, e.message);
      assert.equal(/the mutated object/.test(e.message), c.mutationTooDeep, e.message);
      assert.ok(request.length + settings.length < 1 << 20, 'only deep input may throw');
      answer = `Error: ${e.message.slice(0, 90)}`;
    }
    t.diagnostic(`${answer}, ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(1)} ms`);
  });
}

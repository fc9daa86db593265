// The limit cases of wasm-tests/src/limits.rs (1.5 MiB Nodes, pod templates of ~20,000
// tolerations, JSON nested 10,000 levels deep) in the *.gatekeeper.wasm artifacts, through the
// OPA SDK (both entrypoints) and burrego's call sequence: each gets the validating half's
// verdict, never a trap or an abort. The module runs on a 64 KiB stack, so deep input would
// overflow here first. Inputs go in as JSON text (JSON.stringify itself overflows JavaScript's
// stack on the deep ones). Time and memory are printed as diagnostics, never asserted.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');
const h = require('./helpers');

// Three lines per case: {name, policy, expect, expectValidating, mutationTooDeep}, the request,
// the settings.
function limitCases() {
  const bin = path.join(h.root, 'target/debug/limit-cases');
  const lines = execFileSync(bin, { maxBuffer: 256 << 20 }).toString().split('\n');
  const cases = [];
  for (let i = 0; i + 2 < lines.length; i += 3) {
    cases.push({ ...JSON.parse(lines[i]), request: lines[i + 1], settings: lines[i + 2] });
  }
  return cases;
}

const text = (s) => {
  const buf = Buffer.from(s);
  return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
};

function cString(memory, addr) {
  const bytes = new Uint8Array(memory.buffer);
  let end = addr;
  while (bytes[end] !== 0) end += 1;
  return Buffer.from(bytes.subarray(addr, end)).toString('utf8');
}

// burrego's sequence (see helpers.burregoHost) with data and input given as text.
function burregoEvaluate(wasm, input, data) {
  const host = h.burregoHost(wasm);
  const x = host.exports;
  const push = (s) => {
    const buf = Buffer.from(s);
    const addr = x.opa_malloc(buf.length);
    if (addr + buf.length > host.memory.buffer.byteLength) throw new Error('write out of bounds');
    new Uint8Array(host.memory.buffer).set(buf, addr);
    const value = x.opa_json_parse(addr, buf.length);
    if (value === 0) throw new Error('Failed to load json in memory');
    return value;
  };
  const dataAddr = push(data);
  const inputAddr = push(input);
  const ctx = x.opa_eval_ctx_new();
  x.opa_eval_ctx_set_input(ctx, inputAddr);
  x.opa_eval_ctx_set_data(ctx, dataAddr);
  x.opa_eval_ctx_set_entrypoint(ctx, 0);
  x.eval(ctx);
  const result = JSON.parse(cString(host.memory, x.opa_json_dump(x.opa_eval_ctx_get_result(ctx))));
  return { result, aborts: host.aborts, memory: host.memory.buffer.byteLength };
}

const ms = (started) => (Number(process.hrtime.bigint() - started) / 1e6).toFixed(1);

for (const c of limitCases()) {
  test(`${c.policy}: ${c.name}`, async (t) => {
    const wasm = h.gatekeeperWasm(c.policy);
    const rejected = c.expectValidating === 'rejected';
    const gatekeeperInput = `{"review":${c.request},"parameters":${c.settings}}`;

    const sdk = await loadPolicy(wasm);
    let started = process.hrtime.bigint();
    const violations = h.violationsOf(assert, sdk.evaluate(text(gatekeeperInput)));
    const gatekeeperMs = ms(started);
    assert.equal(violations.length > 0, rejected, JSON.stringify(violations).slice(0, 300));
    // Malformed input is a 400; what restore mode would repair is a 403 in this half. A mutated
    // object too deep to hand back is the full policy's 400 only: this half hands nothing back.
    if (c.expect === 'rejected' && !c.mutationTooDeep) {
      assert.equal(violations[0].details.code, 400, violations[0].msg);
    }

    sdk.setData(text(c.settings));
    started = process.hrtime.bigint();
    const review = sdk.evaluate(text(`{"request":${c.request}}`), 'policy/main')[0].result;
    const mainMs = ms(started);
    assert.equal(review.response.allowed, !rejected, JSON.stringify(review.response).slice(0, 300));

    const burrego = burregoEvaluate(wasm, gatekeeperInput, '{}');
    assert.equal(h.violationsOf(assert, burrego.result).length > 0, rejected);
    assert.deepEqual(burrego.aborts, []);

    t.diagnostic(
      `gatekeeper ${gatekeeperMs} ms, main ${mainMs} ms, memory ${sdk.mem.buffer.byteLength / 1024} KiB ` +
        `(SDK), ${burrego.memory / 1024} KiB (burrego)`,
    );
  });
}

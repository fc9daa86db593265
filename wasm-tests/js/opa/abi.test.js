// The module's contract with its hosts: imports, exports, ABI globals, metadata, and what happens
// on input no engine should send. Gatekeeper-mode answers must never fail open: Kubewarden allows
// a request whose result is not [{"result": [{"msg": <string>}, ...]}].
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { loadPolicy } = require('@open-policy-agent/opa-wasm');
const h = require('./helpers');

const REQUIRED = [
  'eval', 'builtins', 'entrypoints', 'opa_eval_ctx_new', 'opa_eval_ctx_set_input',
  'opa_eval_ctx_set_data', 'opa_eval_ctx_set_entrypoint', 'opa_eval_ctx_get_result',
  'opa_malloc', 'opa_json_parse', 'opa_json_dump', 'opa_heap_ptr_get', 'opa_heap_ptr_set',
  'opa_eval',
];

for (const policy of h.policies) {
  test(`${policy}: imports, exports, ABI globals and Kubewarden metadata`, () => {
    const module = new WebAssembly.Module(h.gatekeeperWasm(policy));
    assert.deepEqual(
      WebAssembly.Module.imports(module).map((i) => `${i.module}.${i.name}:${i.kind}`).sort(),
      ['env.memory:memory', 'env.opa_abort:function'],
    );
    const exports = Object.fromEntries(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
    assert.equal(exports.memory, 'memory');
    for (const name of REQUIRED) assert.equal(exports[name], 'function', name);

    // Instantiating with the hosts' memory (5 pages, no maximum) is the memory-limits check.
    const host = h.burregoHost(h.gatekeeperWasm(policy));
    assert.equal(host.exports.memory.buffer, host.memory.buffer, 'memory is re-exported');
    assert.ok(host.exports.opa_wasm_abi_version instanceof WebAssembly.Global);
    assert.equal(host.exports.opa_wasm_abi_version.value, 1);
    assert.ok(host.exports.opa_wasm_abi_minor_version instanceof WebAssembly.Global);
    assert.ok(host.exports.opa_wasm_abi_minor_version.value >= 2);
    assert.deepEqual(host.builtins, {});
    assert.deepEqual(host.entrypoints, { 'policy/violation': 0, 'policy/main': 1 });

    const metadata = (wasm) => {
      const [section] = WebAssembly.Module.customSections(
        new WebAssembly.Module(wasm), 'io.kubewarden.metadata');
      return JSON.parse(Buffer.from(section).toString('utf8'));
    };
    const gatekeeper = metadata(h.gatekeeperWasm(policy));
    const wapc = metadata(h.readArtifact(`${policy}.wasm`));
    assert.equal(gatekeeper.executionMode, 'gatekeeper');
    assert.equal(gatekeeper.mutating, false);
    assert.equal(gatekeeper.protocolVersion, 'Unknown');
    assert.deepEqual(gatekeeper.rules, wapc.rules);
    assert.deepEqual(gatekeeper.annotations, wapc.annotations);
    assert.equal(gatekeeper.backgroundAudit, wapc.backgroundAudit);
  });

  test(`${policy}: input no engine should send is a violation that says so`, async () => {
    const review = h.wapcVerdicts().find((c) => c.policy === policy).review;
    const utf8 = (text) => new Uint8Array(Buffer.from(text)).buffer;
    const cases = [
      // [name, input (an ArrayBuffer is passed to the module as raw bytes), words in the message]
      ['no input', undefined, 'no input'],
      // The SDK's opa_eval path passes falsy inputs as "no input", its context path as JSON.
      ['null', null, /no input|must be a JSON object, not `null`/],
      ['false', false, /no input|must be a JSON object, not `false`/],
      ['empty string', '', /no input|must be a JSON object, not `""`/],
      ['a string', 'review', 'must be a JSON object'],
      ['an array', [review], 'must be a JSON object'],
      ['empty object', {}, 'has no `review`'],
      ['null review', { review: null }, 'has no `review`'],
      ['review not an object', { review: 42 }, 'invalid type'],
      ['review without operation', { review: { ...review, operation: undefined } }, 'missing field `operation`'],
      ['OPA-shaped input', { request: review }, 'has no `review`'],
      ['misspelt setting', { review, parameters: { mdoe: 'deny' } }, 'mdoe'],
      ['settings not an object', { review, parameters: 'deny' }, 'settings'],
      ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]).buffer, 'not UTF-8'],
      ['truncated JSON', utf8('{"review": {"uid": '), 'malformed input'],
      ['trailing garbage', utf8(`${JSON.stringify({ review })} }`), 'trailing characters'],
      ['100,000 unclosed arrays', utf8(`{"review": ${'['.repeat(100000)}`), 'EOF while parsing'],
      [
        '100,000 nested arrays in the settings',
        utf8(`{"review": ${JSON.stringify(review)}, "parameters": {"a": ${'['.repeat(1e5)}${']'.repeat(1e5)}}}`),
        'recursion limit exceeded',
      ],
    ];
    const sdk = await loadPolicy(h.gatekeeperWasm(policy));
    const legacy = await loadPolicy(h.gatekeeperWasm(policy));
    legacy.minorVersion = 1;
    const burrego = h.burregoHost(h.gatekeeperWasm(policy));
    for (const [name, input, words] of cases) {
      const runs = [['SDK opa_eval', () => sdk.evaluate(input)]];
      // The context path parses input with opa_json_parse, which refuses what is not JSON (the
      // SDK then throws); burrego serialises the input itself, so it is always JSON.
      if (!(input instanceof ArrayBuffer)) {
        runs.push(['SDK context calls', () => legacy.evaluate(input)]);
        if (input !== undefined) runs.push(['burrego sequence', () => burrego.evaluate(0, input)]);
      }
      for (const [path, run] of runs) {
        const violations = h.violationsOf(assert, run());
        assert.equal(violations.length, 1, `${name} via ${path}`);
        assert.ok(violations[0].msg.startsWith(`${policy}: `), violations[0].msg);
        const says = words instanceof RegExp ? words.test(violations[0].msg) : violations[0].msg.includes(words);
        assert.ok(says, `${name} via ${path}: ${violations[0].msg}`);
        assert.equal(violations[0].details.code, 400);
      }
    }
    assert.deepEqual(burrego.aborts, []);
  });

  test(`${policy}: host errors abort through opa_abort and never return`, async () => {
    const burrego = h.burregoHost(h.gatekeeperWasm(policy));
    const x = burrego.exports;
    // burrego's opa_abort returns normally: the module must trap right after calling it.
    const ctx = x.opa_eval_ctx_new();
    x.opa_eval_ctx_set_entrypoint(ctx, 7);
    assert.throws(() => x.eval(ctx), WebAssembly.RuntimeError);
    assert.deepEqual(burrego.aborts, ['internal: illegal entrypoint id']);
    assert.throws(() => x.opa_eval(1, 0, 0, 0, 0, x.opa_heap_ptr_get(), 0), WebAssembly.RuntimeError);
    assert.equal(burrego.aborts[1], 'opa_eval: invalid reserved argument');
    // The SDK's opa_abort throws the message.
    const sdk = await loadPolicy(h.gatekeeperWasm(policy));
    assert.throws(() => sdk.evaluate({}, 7), /illegal entrypoint id/);
    // opa_json_parse answers 0 for text that is not one JSON document.
    for (const text of ['{', '{} {}', 'nul', '']) {
      const bytes = Buffer.from(text);
      const addr = x.opa_malloc(bytes.length);
      new Uint8Array(x.memory.buffer).set(bytes, addr);
      assert.equal(x.opa_json_parse(addr, bytes.length), 0, JSON.stringify(text));
    }
    // The instance still evaluates after the traps.
    assert.deepEqual(sdk.evaluate({ review: h.wapcVerdicts().find((c) => c.accepted && c.policy === policy).review }), [{ result: [] }]);
  });
}

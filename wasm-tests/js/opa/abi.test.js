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
    assert.equal(gatekeeper.backgroundAudit, wapc.backgroundAudit);
    // Its annotations are the waPC build's but for its own package identity (title, display
    // name, OCI repository, release tag), checked in wasm-tests/tests/gatekeeper.rs.
    assert.equal(gatekeeper.annotations['io.kubewarden.policy.title'], `${policy}-gatekeeper`);
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

  // Hosts pass raw addresses and lengths. Whatever they pass, the module must not read outside
  // the bytes a host can have written (a negative length as an unsigned one is gigabytes): a
  // range it cannot read is "not JSON" or a 400, and a handle that is not the module's own aborts
  // through opa_abort, never a memory access out of bounds.
  test(`${policy}: hostile lengths and addresses get a clean answer, never an out-of-bounds read`, async () => {
    const accepted = h.wapcVerdicts().find((c) => c.accepted && c.policy === policy).review;
    const burrego = h.burregoHost(h.gatekeeperWasm(policy));
    const x = burrego.exports;
    const memoryEnd = () => x.memory.buffer.byteLength;
    const poke = (text, addr) => new Uint8Array(x.memory.buffer).set(Buffer.from(text), addr);
    // burrego's opa_abort returns, so an abort ends in the module's own `unreachable`.
    const aborts = (name, run, message) => {
      const before = burrego.aborts.length;
      assert.throws(run, (e) => e instanceof WebAssembly.RuntimeError && /unreachable/.test(e.message), name);
      assert.deepEqual(burrego.aborts.slice(before), [message], name);
    };

    const text = '{"a": 1}';
    const addr = x.opa_malloc(text.length);
    poke(text, addr);
    const value = x.opa_json_parse(addr, text.length);
    assert.equal(h.cString(x.memory, x.opa_json_dump(value)), text);
    // JSON where no host writes: above the heap pointer (never allocated), and in the stack.
    const top = x.opa_heap_ptr_get();
    poke('{}', top);
    poke('{}', 1024);
    const ranges = [
      ['a negative length', addr, -1],
      ['the most negative length', addr, -0x80000000],
      ['a 2 GiB length', addr, 0x7fffffff],
      ['a range past the end of memory', memoryEnd() - 1, 2],
      ['a negative address', -8, 2],
      ['JSON above the heap pointer', top, 2],
      ['JSON in the stack', 1024, 2],
    ];
    for (const [name, at, length] of ranges) assert.equal(x.opa_json_parse(at, length), 0, name);
    assert.deepEqual(burrego.aborts, []);

    const handles = [
      ['the text instead of its value', addr],
      ['a misaligned address', value + 1],
      ['a negative address', -4],
      ['the end of memory', memoryEnd() - 4],
      ['above the heap pointer', x.opa_heap_ptr_get() + 64],
    ];
    for (const [name, handle] of handles) {
      aborts(name, () => x.opa_json_dump(handle), 'opa_json_dump: not a value this module returned');
    }
    const ctx = x.opa_eval_ctx_new();
    aborts('a value as a context', () => x.opa_eval_ctx_set_input(value, value), 'opa_eval_ctx_set_input: not an evaluation context');
    aborts('a negative context', () => x.opa_eval_ctx_set_data(-1, value), 'opa_eval_ctx_set_data: not an evaluation context');
    aborts('a misaligned context', () => x.opa_eval_ctx_set_entrypoint(ctx + 2, 0), 'opa_eval_ctx_set_entrypoint: not an evaluation context');
    aborts('no context', () => x.opa_eval_ctx_get_result(0), 'opa_eval_ctx_get_result: not an evaluation context');
    aborts('text as a context', () => x.eval(addr), 'eval: not an evaluation context');
    x.opa_eval_ctx_set_input(ctx, addr);
    aborts('a context whose input is text', () => x.eval(ctx), "eval: the context's input is not a value");
    x.opa_eval_ctx_set_input(ctx, value);
    x.opa_eval_ctx_set_data(ctx, -8);
    aborts('a context whose data is no value', () => x.eval(ctx), "eval: the context's data is not a value");
    aborts('a negative heap pointer', () => x.opa_heap_ptr_set(-1), 'opa_heap_ptr_set: the address is beyond linear memory');
    aborts('a heap pointer past memory', () => x.opa_heap_ptr_set(memoryEnd() + 1), 'opa_heap_ptr_set: the address is beyond linear memory');
    aborts('a negative size', () => x.opa_malloc(-1), 'opa_malloc: failed');

    // opa_eval, given the input as the SDK writes it: at the heap mark, without allocating.
    const input = Buffer.from(JSON.stringify({ parameters: {}, review: accepted }));
    const mark = x.opa_heap_ptr_get();
    const evaluate = (entrypoint, at, length, heapPtr) => {
      poke(input, mark);
      return JSON.parse(h.cString(x.memory, x.opa_eval(0, entrypoint, 0, at, length, heapPtr, 0)));
    };
    const end = mark + input.length;
    assert.deepEqual(evaluate(0, mark, input.length, end), [{ result: [] }], 'the well-formed call');
    const inputs = [
      ['a negative length', mark, -1, end, 'has a negative length (-1)'],
      ['the most negative length', mark, -0x80000000, end, 'has a negative length'],
      ['a length past the heap pointer', mark, 0x7fffffff, end, "is not in the module's heap"],
      ['input above the heap pointer', mark, input.length, end - 1, "is not in the module's heap"],
      ['input in the stack', 1024, input.length, end, "is not in the module's heap"],
      ['a negative address', -input.length, input.length, end, "is not in the module's heap"],
    ];
    for (const [name, at, length, heapPtr, words] of inputs) {
      const [violation, ...more] = h.violationsOf(assert, evaluate(0, at, length, heapPtr));
      assert.equal(more.length, 0, name);
      assert.equal(violation.details.code, 400, name);
      assert.ok(violation.msg.startsWith(`${policy}: the host's input `) && violation.msg.includes(words), `${name}: ${violation.msg}`);
      const [{ result: { response } }] = evaluate(1, at, length, heapPtr);
      assert.equal(response.allowed, false, name);
      assert.equal(response.status.code, 400, name);
      assert.ok(response.status.message.includes(words), `${name}: ${response.status.message}`);
    }
    aborts('a heap pointer past memory', () => evaluate(0, mark, input.length, memoryEnd() + 1), 'opa_eval: the heap pointer is beyond linear memory');
    assert.deepEqual(evaluate(0, mark, input.length, end), [{ result: [] }], 'the well-formed call, after all that');
    assert.deepEqual(burrego.evaluate(0, { review: accepted }), [{ result: [] }]);

    // The SDK's opa_abort throws the message.
    const sdk = await loadPolicy(h.gatekeeperWasm(policy));
    const s = sdk.wasmInstance.exports;
    assert.equal(s.opa_json_parse(s.opa_heap_ptr_get(), -1), 0);
    assert.throws(() => s.opa_json_dump(3), /opa_json_dump: not a value this module returned/);
    assert.throws(() => s.eval(-4), /eval: not an evaluation context/);
    assert.deepEqual(sdk.evaluate({ review: accepted }), [{ result: [] }]);
  });
}

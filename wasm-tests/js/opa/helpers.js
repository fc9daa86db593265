// Shared by the tests: where the artifacts are, the waPC verdicts they are compared with, and a
// host that drives a module with exactly burrego's call sequence (Kubewarden's gatekeeper and
// opa modes), since kwctl itself is not part of this build.
'use strict';

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '../../..');

// Policies are the folders of policies/ that carry Kubewarden metadata (as in build.sh).
const policies = fs
  .readdirSync(path.join(root, 'policies'))
  .filter((name) => fs.existsSync(path.join(root, 'policies', name, 'metadata.yml')))
  .sort();

function readArtifact(file) {
  const full = path.join(root, 'dist', file);
  if (!fs.existsSync(full)) throw new Error(`${full} is missing: run ./build.sh first`);
  return fs.readFileSync(full);
}

const gatekeeperWasm = (policy) => readArtifact(`${policy}.gatekeeper.wasm`);

let verdicts;
// The waPC build's verdicts (deny mode) for every example request x settings pairing, computed
// at test time from dist/<policy>.wasm by wasm-tests' `wapc-verdicts`.
function wapcVerdicts() {
  if (!verdicts) {
    const bin = path.join(root, 'target/debug/wapc-verdicts');
    if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run ./build.sh first`);
    verdicts = JSON.parse(execFileSync(bin, { maxBuffer: 64 << 20 }));
  }
  return verdicts;
}

function example(policy, name) {
  const file = path.join(root, 'policies', policy, 'examples/requests', `${name}.json`);
  return JSON.parse(fs.readFileSync(file, 'utf8')).request;
}

function settings(policy, name) {
  const file = path.join(root, 'policies', policy, 'examples/settings', `${name}.json`);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

// Asserts the shape Kubewarden's gatekeeper mode needs not to fail open, and returns the
// violations: [{"result": [{"msg": <string>, ...}, ...]}].
function violationsOf(assert, resultSet) {
  assert.ok(Array.isArray(resultSet) && resultSet.length === 1, JSON.stringify(resultSet));
  const list = resultSet[0].result;
  assert.ok(Array.isArray(list), JSON.stringify(resultSet));
  for (const violation of list) assert.equal(typeof violation.msg, 'string');
  return list;
}

const PAGE = 65536;

function cString(memory, addr) {
  const bytes = new Uint8Array(memory.buffer);
  let end = addr;
  while (bytes[end] !== 0) end += 1;
  return Buffer.from(bytes.subarray(addr, end)).toString('utf8');
}

// A module driven the way burrego (policy-evaluator v0.30.4) drives it: a 5-page memory without
// maximum that the host never grows, an opa_abort that returns normally, data and input written
// at opa_malloc'd addresses, and the context call sequence for every evaluation.
function burregoHost(bytes) {
  const memory = new WebAssembly.Memory({ initial: 5 });
  const aborts = [];
  const noBuiltins = () => {
    throw new Error('no builtins are offered');
  };
  const env = {
    memory,
    opa_abort: (addr) => {
      aborts.push(cString(memory, addr));
    },
    opa_println: () => {},
    opa_builtin0: noBuiltins,
    opa_builtin1: noBuiltins,
    opa_builtin2: noBuiltins,
    opa_builtin3: noBuiltins,
    opa_builtin4: noBuiltins,
  };
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env });
  const x = instance.exports;
  const dump = (value) => JSON.parse(cString(memory, x.opa_json_dump(value)));
  const push = (text) => {
    const buf = Buffer.from(text);
    const addr = x.opa_malloc(buf.length);
    // Like wasmtime's Memory::write: out of bounds is an error, the host does not grow memory.
    if (addr + buf.length > memory.buffer.byteLength) throw new Error('write out of bounds');
    new Uint8Array(memory.buffer).set(buf, addr);
    const value = x.opa_json_parse(addr, buf.length);
    if (value === 0) throw new Error('Failed to load json in memory');
    return value;
  };
  const builtins = dump(x.builtins());
  push('{}');
  const baseHeapPtr = x.opa_heap_ptr_get();
  const entrypoints = dump(x.entrypoints());
  return {
    memory,
    aborts,
    builtins,
    entrypoints,
    exports: x,
    // One evaluation: steps 2-10 of burrego's Evaluator::evaluate.
    evaluate(entrypoint, input, data = {}) {
      x.opa_heap_ptr_set(baseHeapPtr);
      const dataAddr = push(JSON.stringify(data));
      const dataHeapPtr = x.opa_heap_ptr_get();
      x.opa_heap_ptr_set(dataHeapPtr);
      const inputAddr = push(JSON.stringify(input));
      const ctx = x.opa_eval_ctx_new();
      x.opa_eval_ctx_set_input(ctx, inputAddr);
      x.opa_eval_ctx_set_data(ctx, dataAddr);
      x.opa_eval_ctx_set_entrypoint(ctx, entrypoint);
      x.eval(ctx);
      return dump(x.opa_eval_ctx_get_result(ctx));
    },
  };
}

module.exports = {
  root,
  policies,
  readArtifact,
  gatekeeperWasm,
  wapcVerdicts,
  example,
  settings,
  violationsOf,
  burregoHost,
  cString,
  PAGE,
};

// The package's `taintguard test` bin (dist/js/bin/taintguard.js), run as `npx taintguard test`
// runs it: on the repository's example suites, and on suites written here that fail, are
// malformed or are missing. The exit codes are the workspace command's: 0 all passed, 1 a case
// failed (a malformed suite is a failed case), 2 nothing could be tested.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTests } from 'taintguard';

const repo = (path) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const bin = repo('dist/js/bin/taintguard.js');

/** Runs the bin from the repository's root, as a user runs it from theirs. */
function taintguard(...args) {
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: repo(''), encoding: 'utf8' });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

let dir;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'taintguard-cli-'));
  // The stale taint patch of incident 1, which {} settings answer by putting the taint back:
  // mutated, where this suite expects accepted.
  mkdirSync(join(dir, 'failing', 'requests'), { recursive: true });
  writeFileSync(join(dir, 'failing', 'requests', 'incident-1.json'),
    readFileSync(repo('policies/taint-preservation/examples/requests/incident-1-stale-taint-patch.json')));
  writeFileSync(join(dir, 'failing', 'suite.yml'), `apiVersion: taintguard.io/v1alpha1
kind: TestSuite
name: wrong expectation
policy: taint-preservation.wasm
settings: {}
cases:
  - name: the stale patch is let through
    request: requests/incident-1.json
    expect: {verdict: accepted}
`);
  mkdirSync(join(dir, 'malformed'));
  writeFileSync(join(dir, 'malformed', 'suite.yaml'), `apiVersion: taintguard.io/v1alpha1
kind: TestSuite
policy: taint-preservation.wasm
cases:
  - name: no expectation
    operation: CREATE
    object: {apiVersion: v1, kind: Node, metadata: {name: n1}}
`);
  mkdirSync(join(dir, 'empty'));
  writeFileSync(join(dir, 'empty', 'notes.yml'), 'kind: Something\n');
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the repository's example suites pass, cluster cases included; only kwctl sessions are skipped", () => {
  const run = taintguard('test', 'policies');
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const lines = run.stdout.trimEnd().split('\n');
  const last = lines.pop();
  const [, passed] = last.match(/^(\d+) passed, 0 failed/) ?? assert.fail(`closing line: ${last}`);
  const marks = lines.map((line) => line.split(' ')[0]);
  assert.deepEqual(marks.filter((m) => m !== 'pass' && m !== 'skip'), [], run.stdout);
  assert.equal(marks.filter((m) => m === 'pass').length, Number(passed));
  for (const skip of lines.filter((line) => line.startsWith('skip'))) {
    assert.match(skip, /replays a kwctl session/);
  }
  // Both policies' suites ran, and the suites whose cases answer cluster questions.
  assert.match(run.stdout, /^pass {2}taint-preservation examples \/ /m);
  assert.match(run.stdout, /^pass {2}toleration-injection examples \/ /m);
  assert.match(run.stdout, /^pass {2}PodTolerationRestriction: the plugin's own test table \/ /m);
});

// Parity with the workspace's `taintguard test`, which runs the waPC modules in the host stack
// policy-server links and answers their cluster calls from the same suites: both write the JSON
// report, and every case must end alike and every request get the same verdict (allowed, code,
// JSONPatch, warnings) from the package as from the Kubewarden module. Cases that replay a kwctl
// session are the only ones the package skips. Without the workspace's command the test fails:
// a parity test that cannot compare proves nothing.
test("the package's verdicts are the workspace's taintguard test's, request by request", () => {
  const workspace = repo('target/debug/taintguard');
  assert.ok(existsSync(workspace),
    `${workspace} is not built: cargo build -p taintguard-cli (./build.sh test builds it first)`);
  const theirs = spawnSync(workspace, ['test', '--output', 'json', 'policies'],
    { cwd: repo(''), encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(theirs.error, undefined, `${workspace}: ${theirs.error}`);
  assert.equal(theirs.status, 0, theirs.stdout + theirs.stderr);
  const ours = taintguard('test', '--output', 'json', 'policies');
  assert.equal(ours.code, 0, ours.stdout + ours.stderr);
  const cases = (stdout) => new Map(JSON.parse(stdout).cases.map((c) => [`${c.suite} / ${c.case}`, c]));
  const [wapc, pkg] = [cases(theirs.stdout), cases(ours.stdout)];
  assert.deepEqual([...pkg.keys()], [...wapc.keys()], 'the same cases, in the same order');
  let requests = 0;
  let skipped = 0;
  for (const [name, want] of wapc) {
    const got = pkg.get(name);
    if (got.outcome === 'skip' && want.outcome !== 'skip') {
      assert.match(got.lines[0], /replays a kwctl session/, name);
      skipped += 1;
      continue;
    }
    assert.equal(got.outcome, want.outcome, name);
    assert.deepStrictEqual(got.verdicts, want.verdicts, name);
    requests += want.verdicts.length;
  }
  assert.ok(skipped <= 3, `${skipped} skipped`);
  assert.ok(requests >= 100, `only ${requests} requests compared`);
  const kinds = [...wapc.values()].flatMap((c) => c.verdicts);
  assert.ok(kinds.some((v) => v.patch), 'no mutation compared');
  assert.ok(kinds.some((v) => v.code === 500), 'no refusal for want of the cluster compared');
  assert.ok(kinds.some((v) => v.warnings.length), 'no warning compared');
});

test('a failing case exits 1 and says how its answer differs', () => {
  const run = taintguard('test', join(dir, 'failing'));
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout, /^FAIL {2}wrong expectation \/ the stale patch is let through$/m);
  assert.match(run.stdout, /verdict: expected accepted, got mutated/);
  assert.match(run.stdout, /^0 passed, 1 failed$/m);
});

test('--output junit writes the failure as JUnit XML, the counts on stderr', () => {
  const run = taintguard('test', '--output', 'junit', join(dir, 'failing', 'suite.yml'));
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout, /^<\?xml /);
  assert.match(run.stdout, /<testsuites name="taintguard test" tests="1" failures="1"/);
  assert.match(run.stdout, /<failure type="expectation" message="verdict: expected accepted, got mutated/);
  assert.equal(run.stderr, '0 passed, 1 failed\n');
});

test('a malformed suite is a failure naming the file, the case and the field', () => {
  const run = taintguard('test', join(dir, 'malformed'));
  assert.equal(run.code, 1, run.stdout + run.stderr);
  const file = join(dir, 'malformed', 'suite.yaml');
  assert.ok(run.stdout.includes(`${file}: case "no expectation": expect: required`), run.stdout);
});

test('nothing to test exits 2: no suite under a path, or a path that is not there', () => {
  const none = taintguard('test', join(dir, 'empty'));
  assert.equal(none.code, 2);
  assert.equal(none.stdout, '');
  assert.match(none.stderr, /^taintguard test: no test suite \(a YAML file with `kind: TestSuite`\) under /);
  const missing = taintguard('test', join(dir, 'not-there'));
  assert.equal(missing.code, 2);
  assert.ok(missing.stderr.startsWith(`taintguard test: ${join(dir, 'not-there')}: `), missing.stderr);
});

test('arguments: --help, an unknown flag, an unknown command', () => {
  const help = taintguard('--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^usage: taintguard test \[--output text\|junit\|json\] \[PATH\]\.\.\./);
  for (const args of [['test', '--verbose'], ['test', '--output', 'xml'], ['check'], []]) {
    const run = taintguard(...args);
    assert.equal(run.code, 2, args.join(' '));
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /usage: taintguard test/);
  }
});

// What the bin leans on, called as other callers might: their mistakes are named, not turned
// into a glue TypeError or a run over a string's characters.
test('runTests names a thrown non-Error and paths that are not a list', () => {
  const files = { read() { throw 'no access'; }, list: () => null };
  assert.throws(() => runTests(['a.yml'], 'text', files), { message: 'a.yml: no access' });
  assert.throws(() => runTests(['a.yml'], 'text', { read() { throw null; }, list: () => null }),
    { message: /^a\.yml: .*null/ });
  assert.throws(() => runTests('policies', 'text', files), { message: 'paths: expected an array of paths' });
  assert.throws(() => runTests(['a.yml'], 'xml', files), { message: /^output: "xml"/ });
});

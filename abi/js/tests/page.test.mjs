// The playground page (dist/js/www) in Debian's headless Chromium, driven as a person would:
// pick a policy, type settings and a request (or build one from its parts), click Evaluate, read
// the verdict, the diff and the patch. What the page shows is checked against the package
// evaluated here in Node. A screenshot of the mutated case is saved to dist/js/screenshot.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { buildRequest, evaluate, policies } from 'taintguard';
import { serve } from '../serve.mjs';

const repo = (path) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const example = (policy, file) => readFileSync(repo(`policies/${policy}/examples/${file}`), 'utf8');

// Without the background-networking flags Chromium keeps trying to reach Google's hosts, which
// this closed network refuses.
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

let server;
let context;
let page;
let profile;
const pageErrors = [];

before(async () => {
  server = await serve(repo('dist/js'));
  profile = mkdtempSync(join(tmpdir(), 'taintguard-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 1100 },
  });
  page = context.pages()[0] ?? await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/www/`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 15000 });
});

after(async () => {
  await context?.close();
  server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** Types the inputs, clicks Evaluate and returns what the page shows. */
async function submit(policy, settings, request) {
  await page.fill('#request', request);
  return evaluateShown(policy, settings);
}

/** Evaluates the request box as it stands and returns what the page shows. */
async function evaluateShown(policy, settings) {
  await page.selectOption('#policy', policy);
  await page.fill('#settings', settings);
  // Hide the previous answer first, so that what is read below is this click's.
  await page.evaluate(() => { for (const id of ['result', 'error']) document.getElementById(id).hidden = true; });
  await page.click('#evaluate');
  await page.waitForSelector('#result:not([hidden]), #error:not([hidden])');
  return page.evaluate(() => ({
    verdict: document.getElementById('verdict').textContent,
    message: document.getElementById('message').textContent,
    warnings: [...document.querySelectorAll('#warnings li')].map((li) => li.textContent),
    added: [...document.querySelectorAll('#diff .add')].map((s) => s.textContent),
    removed: [...document.querySelectorAll('#diff .del')].map((s) => s.textContent),
    patch: document.getElementById('patch').textContent,
    error: document.getElementById('error').hidden ? null
      : document.getElementById('error-message').textContent,
  }));
}

test('the policy list comes from the package', async () => {
  const options = await page.$$eval('#policy option', (os) => os.map((o) => o.value));
  assert.deepEqual(options, policies().map((p) => p.name));
  // The package links every policy folder (its build fails otherwise); these two at least.
  for (const name of ['taint-preservation', 'toleration-injection']) assert.ok(options.includes(name), name);
});

test('a mutation shows its verdict, diff and patch', async () => {
  const settings = example('toleration-injection', 'settings/hostpath-provisioner.json');
  const request = example('toleration-injection', 'requests/hostpath-helper-pod.json');
  const shown = await submit('toleration-injection', settings, request);
  const want = evaluate('toleration-injection', request, settings);
  assert.equal(shown.error, null);
  assert.equal(shown.verdict, 'Accepted with changes');
  assert.deepEqual(shown.warnings, want.warnings);
  assert.deepEqual(JSON.parse(shown.patch), want.patch);
  // Each added toleration shows up as added lines of the diff, and nothing is removed.
  for (const op of want.patch) {
    assert.ok(shown.added.some((line) => line.includes(`"key": "${op.value.key}"`)), op.value.key);
  }
  assert.deepEqual(shown.removed, []);
  await page.screenshot({ path: repo('dist/js/screenshot.png'), fullPage: true });
});

/** Picks a playground example, clicks Evaluate and returns what the page shows and its inputs. */
async function runExample(name) {
  await page.selectOption('#example', name);
  const inputs = await page.evaluate(() => ({
    policy: document.getElementById('policy').value,
    settings: document.getElementById('settings').value,
    request: document.getElementById('request').value,
    cluster: document.getElementById('cluster').value,
  }));
  await page.evaluate(() => { for (const id of ['result', 'error']) document.getElementById(id).hidden = true; });
  await page.click('#evaluate');
  await page.waitForSelector('#result:not([hidden]), #error:not([hidden])');
  const shown = await page.evaluate(() => ({
    verdict: document.getElementById('verdict').textContent,
    message: document.getElementById('message').textContent,
    warnings: [...document.querySelectorAll('#warnings li')].map((li) => li.textContent),
    annotations: document.getElementById('annotations').textContent,
    patch: document.getElementById('patch').textContent,
    error: document.getElementById('error').hidden ? null
      : document.getElementById('error-message').textContent,
  }));
  return { inputs, shown };
}

// The cluster panel: examples that need the cluster's answers fill it, and the page answers as
// the package does in Node with the same cluster.
test('the cluster panel answers PodTolerationRestriction and nodeTaints rules', async () => {
  const outside = await runExample('ptr-outside');
  assert.equal(outside.shown.error, null);
  assert.equal(outside.shown.verdict, 'Rejected (403)');
  assert.match(outside.shown.message, /conflict with its namespace whitelist: dedicated=team-b:NoSchedule/);
  const wantOutside = evaluate(outside.inputs.policy, { kind: 'AdmissionReview', request: {
    uid: 'playground', kind: { group: '', version: 'v1', kind: 'Pod' }, name: 'web-1', namespace: 'team-a',
    operation: 'CREATE', userInfo: { username: 'playground@example.com', groups: ['system:authenticated'] },
    object: JSON.parse(outside.inputs.request) } }, outside.inputs.settings, outside.inputs.cluster);
  assert.equal(outside.shown.message, wantOutside.message);

  const defaulted = await runExample('ptr-default');
  assert.equal(defaulted.shown.verdict, 'Accepted with changes');
  assert.match(defaulted.shown.annotations, /dedicated=team-a:NoSchedule \(default toleration of namespace "team-a"\)/);
  await page.screenshot({ path: repo('dist/js/screenshot-cluster.png'), fullPage: true });
  assert.ok(statSync(repo('dist/js/screenshot-cluster.png')).size > 10000, 'the screenshot was written');

  const nodes = await runExample('node-taints');
  assert.equal(nodes.shown.verdict, 'Accepted with changes');
  assert.match(nodes.shown.patch, /example\.com\/maintenance/);
  assert.doesNotMatch(nodes.shown.patch, /"dedicated"/);

  // Without the cluster, the Namespace cannot be read: the Kubewarden build's refusal.
  await page.selectOption('#example', 'ptr-outside');
  await page.fill('#cluster', '');
  const shown = await evaluateShown('toleration-injection', JSON.stringify({ podTolerationRestriction: { enabled: true } }));
  assert.equal(shown.verdict, 'Rejected (500)');
  assert.match(shown.message, /namespace "team-a" cannot be read/);
  await page.selectOption('#example', '');
  await page.fill('#cluster', '');
  assert.deepEqual(pageErrors, []);
});

test('a rejection shows its code and message', async () => {
  const shown = await submit('taint-preservation',
    example('taint-preservation', 'settings/deny.json'),
    example('taint-preservation', 'requests/incident-1-stale-taint-patch.json'));
  assert.equal(shown.verdict, 'Rejected (403)');
  assert.match(shown.message, /may not remove protected taint/);
  assert.equal(shown.patch, 'No patch.');
});

test('a bare object is judged as a CREATE by a person', async () => {
  const review = JSON.parse(example('toleration-injection', 'requests/flannel-v0.24.4-daemonset.json'));
  const shown = await submit('toleration-injection', '{}', JSON.stringify(review.request.object, null, 2));
  assert.equal(shown.verdict, 'Accepted with changes');
  assert.ok(shown.added.some((line) => line.includes('node-role.kubernetes.io/master')));
});

test('invalid settings show the error naming the field', async () => {
  const shown = await submit('toleration-injection', '{"rules": [{"name": "x"}]}',
    example('toleration-injection', 'requests/hostpath-helper-pod.json'));
  assert.match(shown.error, /settings field `rules\[0\]\.tolerations`/);
  assert.ok(await page.isHidden('#result'));
});

test('text that is not JSON is reported, not thrown', async () => {
  const shown = await submit('taint-preservation', '{}', '{"kind": ');
  assert.match(shown.error, /^Request is not valid JSON/);
  assert.deepEqual(pageErrors, []);
});

/** Fills the request builder with `parts` (objects as text) and clicks Build request. */
async function build(parts) {
  await page.selectOption('#build-operation', parts.operation);
  const requester = parts.user ? 'user' : parts.serviceAccount ? 'serviceAccount' : 'none';
  await page.selectOption('#build-requester', requester);
  if (parts.user) {
    await page.fill('#build-user', parts.user);
    await page.fill('#build-groups', (parts.groups ?? []).join(', '));
  }
  if (parts.serviceAccount) await page.fill('#build-service-account', parts.serviceAccount);
  await page.setChecked('#build-patch', parts.patch ?? false);
  await page.fill('#build-old-object', parts.oldObject ?? '');
  await page.fill('#build-object', parts.object ?? '');
  await page.click('#build');
  return page.evaluate(() => (document.getElementById('build-error').hidden ? null
    : document.getElementById('build-error').textContent));
}

// What `kubectl get node worker-1 -o yaml` prints, and the same Node written back without its
// taint by the node controller, as a stale patch does (incident 1).
const worker = example('taint-preservation', 'objects/worker-1.yaml');
const TAINT = '  taints:\n  - key: example.com/dedicated\n    value: gpu\n    effect: NoSchedule\n';
const dropsTaint = {
  operation: 'UPDATE',
  serviceAccount: 'kube-system/node-controller',
  patch: true,
  oldObject: worker,
  object: worker.replace(TAINT, ''),
};

test('a built request fills the request box and is judged as the package judges it', async () => {
  assert.notEqual(dropsTaint.object, worker, 'the taint is removed from the new object');
  assert.equal(await build(dropsTaint), null);
  const review = buildRequest(dropsTaint);
  assert.deepEqual(JSON.parse(await page.inputValue('#request')), review);
  // The default settings protect example.com/dedicated: the policy puts it back.
  const want = evaluate('taint-preservation', review, {});
  assert.ok(want.accepted && want.mutatedObject, 'the package restores the taint');
  const shown = await evaluateShown('taint-preservation', '{}');
  assert.equal(shown.error, null);
  assert.equal(shown.verdict, 'Accepted with changes');
  assert.deepEqual(shown.warnings, want.warnings);
  assert.deepEqual(JSON.parse(shown.patch), want.patch);
  assert.ok(shown.added.some((line) => line.includes('"key": "example.com/dedicated"')));
});

test('the builder shows what is wrong with a part, and leaves the request box alone', async () => {
  await page.fill('#request', '{"kept": true}');
  const error = await build({ ...dropsTaint, oldObject: '' });
  assert.match(error ?? '', /old object/);
  assert.equal(await page.inputValue('#request'), '{"kept": true}');
  assert.match(await build({ ...dropsTaint, object: 'kind: [' }) ?? '', /^Cannot build the request: object: not YAML or JSON/);
  assert.match(await build({ ...dropsTaint, serviceAccount: 'node-controller' }) ?? '', /serviceAccount: .*namespace\/name/);
  // A good build clears the error.
  assert.equal(await build(dropsTaint), null);
  assert.deepEqual(pageErrors, []);
});

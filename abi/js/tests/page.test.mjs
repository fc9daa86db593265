// The playground page (dist/js/www) in Debian's headless Chromium, driven as a person would:
// pick a policy, type settings and a request, click Evaluate, read the verdict, the diff and the
// patch. What the page shows is checked against the package evaluated here in Node. A
// screenshot of the mutated case is saved to dist/js/screenshot.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { evaluate } from 'taintguard';
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
  await page.selectOption('#policy', policy);
  await page.fill('#settings', settings);
  await page.fill('#request', request);
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
  assert.deepEqual(options, ['taint-preservation', 'toleration-injection']);
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

// The playground: evaluates the pasted request with the WebAssembly package in this page and
// shows the verdict, the object's diff and the JSONPatch.
import init, { evaluate, policies, version } from '../web/taintguard.js';
import { unifiedDiff } from './diff.js';

const $ = (id) => document.getElementById(id);

/** A bare Kubernetes object becomes a CREATE request by a person, so it can be judged alone. */
export function asRequest(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const isRequest = value.kind === 'AdmissionReview' || 'operation' in value || 'userInfo' in value;
  if (isRequest || typeof value.kind !== 'string') return value;
  const [group, version] = String(value.apiVersion ?? 'v1').includes('/')
    ? value.apiVersion.split('/')
    : ['', value.apiVersion ?? 'v1'];
  return {
    uid: 'playground',
    kind: { group, version, kind: value.kind },
    name: value.metadata?.name,
    namespace: value.metadata?.namespace,
    operation: 'CREATE',
    userInfo: { username: 'playground@example.com', groups: ['system:authenticated'] },
    object: value,
  };
}

/** JSON.parse with the field named in the error. */
function parse(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not valid JSON: ${e.message}`);
  }
}

function show(id, visible) {
  $(id).hidden = !visible;
}

function renderDiff(before, after) {
  const pre = $('diff');
  pre.replaceChildren();
  const hunks = unifiedDiff(before, after);
  if (hunks.length === 0) {
    pre.textContent = 'The policy leaves the object unchanged.';
    return;
  }
  const line = (cls, text) => {
    const span = document.createElement('span');
    span.className = cls;
    span.textContent = text;
    pre.append(span);
  };
  line('file', '--- object\n+++ mutated object\n');
  for (const hunk of hunks) {
    line('hunk', hunk.header);
    for (const { type, text } of hunk.lines) {
      line(type === '+' ? 'add' : type === '-' ? 'del' : 'ctx', `${type}${text}\n`);
    }
  }
}

function renderVerdict(request, verdict) {
  const mutated = verdict.accepted && verdict.mutatedObject !== null;
  const badge = $('verdict');
  badge.className = `badge ${verdict.accepted ? (mutated ? 'mutated' : 'accepted') : 'rejected'}`;
  badge.textContent = verdict.accepted
    ? (mutated ? 'Accepted with changes' : 'Accepted')
    : `Rejected (${verdict.code})`;
  $('message').textContent = verdict.message ?? '';
  $('warnings').replaceChildren(...verdict.warnings.map((w) => {
    const li = document.createElement('li');
    li.textContent = w;
    return li;
  }));
  $('annotations').replaceChildren(...Object.entries(verdict.auditAnnotations).flatMap(([k, v]) => {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    return [dt, dd];
  }));
  const inner = request.kind === 'AdmissionReview' ? request.request : request;
  const before = JSON.stringify(inner?.object ?? null, null, 2);
  renderDiff(before, mutated ? JSON.stringify(verdict.mutatedObject, null, 2) : before);
  $('patch').textContent = verdict.patch ? JSON.stringify(verdict.patch, null, 2) : 'No patch.';
}

function run() {
  show('error', false);
  try {
    const settings = parse($('settings').value || '{}', 'Settings');
    const request = asRequest(parse($('request').value, 'Request'));
    const verdict = evaluate($('policy').value, request, settings);
    renderVerdict(request, verdict);
    show('result', true);
  } catch (e) {
    show('result', false);
    $('error-message').textContent = e.message;
    show('error', true);
  }
}

async function main() {
  await init();
  const list = policies();
  $('version').textContent = `v${version()}`;
  $('policy').replaceChildren(...list.map((p) => new Option(p.name, p.name)));
  const describe = () => {
    $('description').textContent = list.find((p) => p.name === $('policy').value).description;
  };
  describe();
  $('policy').addEventListener('change', describe);
  $('defaults').addEventListener('click', () => {
    const policy = list.find((p) => p.name === $('policy').value);
    $('settings').value = JSON.stringify(policy.defaultSettings, null, 2);
  });
  $('form').addEventListener('submit', (event) => {
    event.preventDefault();
    run();
  });
  document.body.dataset.ready = 'true';
}

main().catch((e) => {
  $('error-message').textContent = `The WebAssembly package failed to load: ${e.message}`;
  show('error', true);
});

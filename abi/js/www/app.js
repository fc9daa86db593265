// The playground: evaluates the pasted (or built) request with the WebAssembly package in this
// page and shows the verdict, the object's diff and the JSONPatch.
import init, { buildRequest, evaluate, policies, version } from '../web/taintguard.js';
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
    // YAML or JSON text, read by the package; empty is no cluster.
    const cluster = $('cluster').value.trim() || null;
    const verdict = evaluate($('policy').value, request, settings, cluster);
    renderVerdict(request, verdict);
    show('result', true);
  } catch (e) {
    show('result', false);
    $('error-message').textContent = e.message;
    show('error', true);
  }
}

/** The builder's fields as `buildRequest` parts (which reads empty text as absent). */
function builderParts() {
  const parts = {
    operation: $('build-operation').value,
    patch: $('build-patch').checked,
    oldObject: $('build-old-object').value,
    object: $('build-object').value,
  };
  // buildRequest reads an empty name as no requester; here an empty field was chosen, so it
  // is an omission to report rather than a request by nobody.
  const named = (id, part) => {
    const name = $(id).value.trim();
    if (!name) throw new Error(`${part}: required, or choose another requester`);
    return name;
  };
  const requester = $('build-requester').value;
  if (requester === 'user') {
    parts.user = named('build-user', 'user');
    parts.groups = $('build-groups').value.split(',').map((g) => g.trim()).filter(Boolean);
  } else if (requester === 'serviceAccount') {
    parts.serviceAccount = named('build-service-account', 'serviceAccount');
  }
  return parts;
}

/** Writes the built review into the request box; the package's error names the bad part. */
function build() {
  show('build-error', false);
  try {
    $('request').value = JSON.stringify(buildRequest(builderParts()), null, 2);
    // The verdict shown was for the request just replaced.
    show('result', false);
    show('error', false);
  } catch (e) {
    $('build-error').textContent = `Cannot build the request: ${e.message}`;
    show('build-error', true);
  }
}

const PTR_SETTINGS = { podTolerationRestriction: { enabled: true } };
const TEAM_A = `namespaces:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team-a
    annotations:
      scheduler.alpha.kubernetes.io/defaultTolerations: '[{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"}]'
      scheduler.alpha.kubernetes.io/tolerationsWhitelist: '[{"key":"dedicated","operator":"Equal","value":"team-a"}]'
`;
const pod = (tolerations) => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-1', namespace: 'team-a' },
  spec: { containers: [{ name: 'web', image: 'nginx:1.27' }], tolerations },
});

/** Examples that need the cluster's answers: policy, settings, request and cluster. */
export const EXAMPLES = {
  'ptr-outside': {
    policy: 'toleration-injection',
    settings: PTR_SETTINGS,
    request: pod([{ key: 'dedicated', operator: 'Equal', value: 'team-b', effect: 'NoSchedule' }]),
    cluster: TEAM_A,
  },
  'ptr-default': {
    policy: 'toleration-injection',
    settings: PTR_SETTINGS,
    request: pod([]),
    cluster: TEAM_A,
  },
  'node-taints': {
    policy: 'toleration-injection',
    settings: { rules: [{ name: 'system-daemonsets', match: { kinds: ['DaemonSet'], namespaces: ['kube-flannel'] },
      nodeTaints: { except: ['dedicated'] } }] },
    request: {
      apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'kube-flannel-ds', namespace: 'kube-flannel' },
      spec: { selector: { matchLabels: { app: 'flannel' } }, template: {
        metadata: { labels: { app: 'flannel' } },
        spec: { containers: [{ name: 'kube-flannel', image: 'flannel/flannel:v0.24.4' }],
          tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }] } } },
    },
    cluster: `nodes:
- apiVersion: v1
  kind: Node
  metadata: {name: worker-3, labels: {pool: general}}
  spec:
    taints:
    - {key: example.com/maintenance, value: planned, effect: NoExecute}
    - {key: dedicated, value: ml, effect: NoExecute}
`,
  },
};

/** Fills the inputs with the chosen example. */
function fillExample() {
  const example = EXAMPLES[$('example').value];
  if (!example) return;
  $('policy').value = example.policy;
  $('policy').dispatchEvent(new Event('change'));
  $('settings').value = JSON.stringify(example.settings, null, 2);
  $('request').value = JSON.stringify(example.request, null, 2);
  $('cluster').value = example.cluster;
  show('result', false);
  show('error', false);
}

/** Shows only the inputs of the chosen requester. */
function showRequesterInputs() {
  const chosen = $('build-requester').value;
  for (const label of document.querySelectorAll('[data-requester]')) {
    label.hidden = label.dataset.requester !== chosen;
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
  $('example').addEventListener('change', fillExample);
  showRequesterInputs();
  $('build-requester').addEventListener('change', showRequesterInputs);
  $('build').addEventListener('click', build);
  document.body.dataset.ready = 'true';
}

main().catch((e) => {
  $('error-message').textContent = `The WebAssembly package failed to load: ${e.message}`;
  show('error', true);
});

// Typed use of the documented API, shared by the Node and the browser binding: `Api` is either
// module's namespace, so both are held to the same shapes.
import type {
  DocumentedPatchOperation,
  DocumentedPolicyInfo,
  DocumentedRequest,
  DocumentedRequestParts,
  DocumentedCluster,
  DocumentedSettings,
  DocumentedTestFiles,
  DocumentedTestRun,
  DocumentedSettingsValidation,
  DocumentedVerdict,
  Equal,
} from './shape.mjs';
import { review } from './shape.mjs';

export interface Api {
  evaluate(
    policy: string,
    request: DocumentedRequest,
    settings?: DocumentedSettings,
    cluster?: DocumentedCluster,
  ): DocumentedVerdict;
  validateSettings(policy: string, settings?: DocumentedSettings): DocumentedSettingsValidation;
  policies(): DocumentedPolicyInfo[];
  version(): string;
  buildRequest(parts: DocumentedRequestParts): Record<string, unknown>;
  runTests(paths: string[], output: 'text' | 'junit', files: DocumentedTestFiles): DocumentedTestRun;
}

/**
 * Each declared type against the documented one: every member must be `true` (`AllTrue`, where
 * the types are known, names the one that is not).
 */
export type Checks<
  Verdict,
  PatchOperation,
  SettingsValidation,
  PolicyInfo,
  Evaluate extends (...args: never[]) => unknown,
  ValidateSettings extends (...args: never[]) => unknown,
  Policies extends (...args: never[]) => unknown,
  Version extends (...args: never[]) => unknown,
> = {
  Verdict: Equal<Verdict, DocumentedVerdict>;
  PatchOperation: Equal<PatchOperation, DocumentedPatchOperation>;
  SettingsValidation: Equal<SettingsValidation, DocumentedSettingsValidation>;
  PolicyInfo: Equal<PolicyInfo, DocumentedPolicyInfo>;
  evaluateParameters: Equal<
    Parameters<Evaluate>,
    [policy: string, request: DocumentedRequest, settings?: DocumentedSettings, cluster?: DocumentedCluster]
  >;
  evaluateResult: Equal<ReturnType<Evaluate>, DocumentedVerdict>;
  validateSettingsParameters: Equal<
    Parameters<ValidateSettings>,
    [policy: string, settings?: DocumentedSettings]
  >;
  validateSettingsResult: Equal<ReturnType<ValidateSettings>, DocumentedSettingsValidation>;
  policiesParameters: Equal<Parameters<Policies>, []>;
  policiesResult: Equal<ReturnType<Policies>, DocumentedPolicyInfo[]>;
  versionResult: Equal<ReturnType<Version>, string>;
};

export type AllTrue<T extends Record<string, true>> = T;

/** Stands for whatever a user does with a value (no `console` without DOM or Node types). */
function show(..._values: unknown[]): void {}

/** What a user writes, as the README shows it; never run, only compiled. */
export function use(api: Api): void {
  const verdict = api.evaluate('taint-preservation', review, { mode: 'restore' });
  api.evaluate('taint-preservation', JSON.stringify(review));
  api.evaluate('taint-preservation', review.request, '{"mode":"deny"}');
  api.evaluate('taint-preservation', review, null);
  api.evaluate('taint-preservation', review, undefined);
  api.evaluate('toleration-injection', review, { podTolerationRestriction: { enabled: true } }, {
    namespaces: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }],
    nodes: [],
    canI: [{ serviceAccount: 'ops/node-maintenance', verb: 'untaint', allowed: true }],
  });
  api.evaluate('toleration-injection', review, null, null);

  if (verdict.patch) {
    for (const op of verdict.patch) {
      const where: string = op.path;
      if (op.op === 'move' || op.op === 'copy') show(op.from ?? where);
    }
    const type: 'JSONPatch' | null = verdict.patchType;
    show(type);
  }
  if (!verdict.accepted) {
    const status: number | null = verdict.code;
    const why: string | null = verdict.message;
    show(status, why);
  }
  const warnings: readonly string[] = verdict.warnings;
  const audit: string | undefined = verdict.auditAnnotations['taintguard/restored'];
  const spec: unknown = verdict.mutatedObject?.['spec'];
  show(warnings, audit, spec);

  const check = api.validateSettings('toleration-injection', { rules: [] });
  if (!check.valid) show(check.message?.length);
  api.validateSettings('toleration-injection');
  api.validateSettings('toleration-injection', null);

  for (const p of api.policies()) {
    const mutating: boolean = p.mutating;
    show(p.name, p.description, mutating, Object.keys(p.defaultSettings));
  }
  const v: string = api.version();
  show(v);

  const built = api.buildRequest({
    operation: 'UPDATE',
    serviceAccount: 'kube-system/node-controller',
    object: 'apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n',
    oldObject: review.request.oldObject,
    patch: true,
  });
  show(built['request']);
  const files: DocumentedTestFiles = { read: (path) => path, list: () => null };
  const run = api.runTests(['tests'], 'junit', files);
  const failed: number = run.failed;
  show(run.output, failed);

  // What must not compile: each line fails if a declaration is wrong or loosened to `any`.
  // @ts-expect-error the patch is null when there is none
  show(verdict.patch.length);
  // @ts-expect-error a request is an object or JSON text
  api.evaluate('taint-preservation', 42);
  // @ts-expect-error the policy is named
  api.evaluate(review);
  // @ts-expect-error a canI answer says whether it is allowed
  api.evaluate('taint-preservation', review, null, { canI: [{ user: 'alice', verb: 'untaint' }] });
  // @ts-expect-error `accepted` is a boolean
  const accepted: string = verdict.accepted;
  // @ts-expect-error there is no such field
  show(verdict.allowed, accepted);
  // @ts-expect-error annotations are strings
  const count: number | undefined = verdict.auditAnnotations['k'];
  // @ts-expect-error an operation is one of RFC 6902's six
  const op: DocumentedPatchOperation['op'] = 'merge';
  // @ts-expect-error policies() takes no argument
  api.policies('taint-preservation');
  // @ts-expect-error an operation is CREATE, UPDATE or DELETE
  api.buildRequest({ operation: 'PATCH' });
  // @ts-expect-error the report is text or junit
  api.runTests(['tests'], 'tap', files);
  // @ts-expect-error the counts are numbers
  const passed: string = run.passed;
  show(passed);
  show(count, op);
}

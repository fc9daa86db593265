// The shapes abi/js/package/README.md documents, written out independently of the package's
// declarations, so that a declaration that drifts from the README (or turns into `any`) fails
// to compile.

/** True exactly when A and B are the same type; `any` equals nothing but `any`. */
export type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export type Assert<T extends true> = T;

export type DocumentedPatchOperation = {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
};

export type DocumentedVerdict = {
  accepted: boolean;
  message: string | null;
  code: number | null;
  warnings: string[];
  auditAnnotations: Record<string, string>;
  mutatedObject: Record<string, unknown> | null;
  patch: DocumentedPatchOperation[] | null;
  patchType: 'JSONPatch' | null;
};

export type DocumentedSettingsValidation = { valid: boolean; message?: string };

export type DocumentedPolicyInfo = {
  name: string;
  description: string;
  mutating: boolean;
  defaultSettings: Record<string, unknown>;
};

/** `request`: an AdmissionReview or AdmissionRequest, as an object or as JSON text. */
export type DocumentedRequest = object | string;
/** `settings`: an object or JSON text; omitted, `null` or `{}` means every default. */
export type DocumentedSettings = object | string | null | undefined;

/** `cluster`: what the cluster answers, as a test suite's `cluster:`; omitted or `null`: none. */
export type DocumentedCluster =
  | {
      namespaces?: Array<Record<string, unknown>>;
      nodes?: Array<Record<string, unknown>>;
      canI?: Array<{ user?: string; serviceAccount?: string; verb: string; name?: string; allowed: boolean }>;
    }
  | string
  | null
  | undefined;

/** `buildRequest(parts)`: the parts of an AdmissionReview, as `taintguard request` takes them. */
export type DocumentedRequestParts = {
  operation: 'CREATE' | 'UPDATE' | 'DELETE';
  user?: string;
  groups?: string[];
  serviceAccount?: string;
  object?: object | string;
  oldObject?: object | string;
  subResource?: string;
  patch?: boolean;
  uid?: string;
};

/** `runTests(paths, output, files)`: how it reads files, and what it answers. */
export type DocumentedTestFiles = {
  read(path: string): string;
  list(path: string): Array<[string, boolean]> | null;
};
export type DocumentedTestRun = { output: string; passed: number; failed: number; skipped: number };

/** An AdmissionReview as a user would write one in a test. */
export const review = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'Node' },
    operation: 'UPDATE',
    name: 'n1',
    userInfo: { username: 'system:serviceaccount:kube-system:some-controller' },
    oldObject: { kind: 'Node', metadata: { name: 'n1' }, spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] } },
    object: { kind: 'Node', metadata: { name: 'n1' }, spec: { taints: [] } },
  },
};

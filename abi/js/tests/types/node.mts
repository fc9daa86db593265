// The Node binding (`taintguard`, dist/js/node/taintguard.d.ts).
import * as taintguard from 'taintguard';
import type {
  PatchOperation,
  PolicyInfo,
  SettingsValidation,
  Verdict,
} from 'taintguard';
import { use, type AllTrue, type Checks } from './api.mjs';

export type NodeChecks = AllTrue<Checks<
  Verdict,
  PatchOperation,
  SettingsValidation,
  PolicyInfo,
  typeof taintguard.evaluate,
  typeof taintguard.validateSettings,
  typeof taintguard.policies,
  typeof taintguard.version
>>;

use(taintguard);

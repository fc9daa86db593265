// The browser binding (`taintguard/web`, dist/js/web/taintguard.d.ts): the same API after the
// default export's init().
import init, * as taintguard from 'taintguard/web';
import type {
  InitOutput,
  PatchOperation,
  PolicyInfo,
  SettingsValidation,
  Verdict,
} from 'taintguard/web';
import { use, type AllTrue, type Checks } from './api.mjs';
import type { Assert, Equal } from './shape.mjs';

export type WebChecks = [
  AllTrue<Checks<
    Verdict,
    PatchOperation,
    SettingsValidation,
    PolicyInfo,
    typeof taintguard.evaluate,
    typeof taintguard.validateSettings,
    typeof taintguard.policies,
    typeof taintguard.version
  >>,
  Assert<Equal<ReturnType<typeof init>, Promise<InitOutput>>>,
];

export async function start(): Promise<void> {
  await init();
  await init({ module_or_path: new URL('./taintguard_bg.wasm', 'https://example.com/') });
  taintguard.initSync({ module: new Uint8Array() });
  use(taintguard);
}

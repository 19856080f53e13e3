/**
 * Curated allowlists, used in a policy as `preset:<name>`. The operator can
 * add or replace presets with WARREN_NETWORK_PRESETS_FILE (a JSON object of
 * name to rules). A preset is expanded when the policy is applied, so a
 * change to it reaches running sandboxes at their next policy change or wake.
 */
import type { Presets } from './policy';

export const BUILTIN_PRESETS: Presets = {
  pypi: ['pypi.org:443', 'files.pythonhosted.org:443'],
  npm: ['registry.npmjs.org:443', 'registry.yarnpkg.com:443'],
  debian: [
    'deb.debian.org:80',
    'deb.debian.org:443',
    'security.debian.org:80',
    'security.debian.org:443',
  ],
  github: [
    'github.com:443',
    '*.github.com:443',
    '*.githubusercontent.com:443',
    'codeload.github.com:443',
  ],
  crates: ['crates.io:443', 'index.crates.io:443', 'static.crates.io:443'],
  go: ['proxy.golang.org:443', 'sum.golang.org:443', 'storage.googleapis.com:443'],
  huggingface: ['huggingface.co:443', '*.huggingface.co:443', '*.hf.co:443'],
  openai: ['api.openai.com:443'],
  anthropic: ['api.anthropic.com:443'],
  'model-apis': [
    'api.openai.com:443',
    'api.anthropic.com:443',
    'generativelanguage.googleapis.com:443',
    'api.mistral.ai:443',
    'api.groq.com:443',
  ],
};

import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Import direction (docs/architecture.md): a folder of src/ may import only from the folders below it. Each entry
// names the folders it must not reach; lab sits above cli's agent parts and must not import cli, and no backend
// imports another backend. Patterns are matched against the import's relative path.
const LAYERS = {
  util: [
    'api',
    'model',
    'config',
    'kube',
    'netfilter',
    'sync',
    'backends',
    'server',
    'inspect',
    'cli',
    'lab',
  ],
  api: ['model', 'config', 'kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli', 'lab'],
  model: ['config', 'kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli', 'lab'],
  config: ['kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli', 'lab'],
  kube: ['netfilter', 'sync', 'backends', 'server', 'inspect', 'cli', 'lab'],
  netfilter: ['kube', 'sync', 'backends', 'server', 'inspect', 'cli', 'lab'],
  sync: ['backends', 'server', 'inspect', 'cli', 'lab'],
  'backends/nftables': ['backends/iptables', 'server', 'inspect', 'cli', 'lab'],
  'backends/iptables': ['backends/nftables', 'server', 'inspect', 'cli', 'lab'],
  server: ['backends', 'inspect', 'cli', 'lab'],
  inspect: ['cli', 'lab'],
  lab: ['cli'],
};

const layerRules = Object.entries(LAYERS).map(([from, forbidden]) => ({
  files: [`src/${from}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: forbidden.map((to) => ({
          // A sibling backend is reached as ../<name>/…, which names no "backends" folder.
          group: to.startsWith('backends/') ? [`**/${to}/**`, `../${to.slice(9)}/**`] : [`**/${to}/**`],
          message: `import direction: src/${from} must not import src/${to} (see docs/architecture.md, "Import direction")`,
        })),
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  ...layerRules,
  {
    // The lab web view's page: plain browser JavaScript modules, served as written (src/lab/web/assets/).
    files: ['src/lab/web/assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        window: 'readonly',
        document: 'readonly',
        Node: 'readonly',
        performance: 'readonly',
        devicePixelRatio: 'readonly',
        fetch: 'readonly',
        EventSource: 'readonly',
      },
    },
  },
  {
    files: ['scripts/**/*.mjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);

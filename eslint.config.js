import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Import direction (docs/architecture.md), at two scales.
//
// Packages: the agent (packages/agent, npm name kube-proxy-ts) is what a node installs and imports nothing of the
// others; the network-namespace kit (packages/netns, @kube-proxy-ts/netns) may import the agent; the lab
// (packages/lab, @kube-proxy-ts/lab) may import both. A package reaches another by its name, never by a relative
// path into its folder.
const AGENT_IMPORTS_NO_PACKAGE = {
  group: ['@kube-proxy-ts/*', '@kube-proxy-ts/**', '**/lab/src/**', '**/netns/src/**', '**/packages/**'],
  message:
    'package direction: the agent (packages/agent) must not import the lab or the netns kit (see docs/architecture.md, "Packages")',
};
const PACKAGE_RULES = {
  netns: [
    {
      group: ['@kube-proxy-ts/lab', '@kube-proxy-ts/lab/**', '**/lab/src/**'],
      message:
        'package direction: packages/netns must not import the lab (see docs/architecture.md, "Packages")',
    },
    {
      group: ['**/agent/src/**', '**/packages/**'],
      message:
        'package direction: import another package by its name (kube-proxy-ts/…), not by a path into it',
    },
  ],
  lab: [
    {
      group: ['**/agent/src/**', '**/netns/src/**', '**/packages/**'],
      message:
        'package direction: import another package by its name (kube-proxy-ts/…), not by a path into it',
    },
  ],
};

// Layers inside the agent: a folder of packages/agent/src may import only from the folders below it. Each entry
// names the folders it must not reach; no backend imports another backend. Patterns are matched against the
// import's relative path.
const LAYERS = {
  util: ['api', 'model', 'config', 'kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli'],
  api: ['model', 'config', 'kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli'],
  model: ['config', 'kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli'],
  config: ['kube', 'netfilter', 'sync', 'backends', 'server', 'inspect', 'cli'],
  kube: ['netfilter', 'sync', 'backends', 'server', 'inspect', 'cli'],
  netfilter: ['kube', 'sync', 'backends', 'server', 'inspect', 'cli'],
  sync: ['backends', 'server', 'inspect', 'cli'],
  'backends/nftables': ['backends/iptables', 'backends/ipvs', 'server', 'inspect', 'cli'],
  'backends/iptables': ['backends/nftables', 'backends/ipvs', 'server', 'inspect', 'cli'],
  'backends/ipvs': ['backends/nftables', 'backends/iptables', 'server', 'inspect', 'cli'],
  server: ['backends', 'inspect', 'cli'],
  inspect: ['cli'],
  cli: [],
};

// The lab's cluster code runs under its own CLI and never imports a CLI, its own or the agent's.
const LAB_LAYERS = ['apiserver', 'cluster', 'controllers', 'oci', 'soak', 'vm', 'web'];
const LAB_NO_CLI = {
  group: ['kube-proxy-ts/cli/*', '**/cli/**'],
  message:
    'import direction: the lab\'s cluster code must not import a CLI (see docs/architecture.md, "Import direction")',
};

const restrict = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

const layerRules = [
  ...Object.entries(LAYERS).map(([from, forbidden]) =>
    restrict(
      [`packages/agent/src/${from}/**/*.ts`],
      [
        ...forbidden.map((to) => ({
          // A sibling backend is reached as ../<name>/…, which names no "backends" folder.
          group: to.startsWith('backends/') ? [`**/${to}/**`, `../${to.slice(9)}/**`] : [`**/${to}/**`],
          message: `import direction: src/${from} must not import src/${to} (see docs/architecture.md, "Import direction")`,
        })),
        AGENT_IMPORTS_NO_PACKAGE,
      ],
    ),
  ),
  restrict(['packages/agent/src/*.ts'], [AGENT_IMPORTS_NO_PACKAGE]),
  restrict(['packages/netns/src/**/*.ts'], PACKAGE_RULES.netns),
  restrict(['packages/lab/src/cli/**/*.ts'], PACKAGE_RULES.lab),
  ...LAB_LAYERS.map((folder) =>
    restrict([`packages/lab/src/${folder}/**/*.ts`], [...PACKAGE_RULES.lab, LAB_NO_CLI]),
  ),
];

export default tseslint.config(
  { ignores: ['**/dist/', 'node_modules/', '.tools/'] },
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
    // Short functions (issue 26): none in a package's src/ over 150 lines. A data table that must stay one
    // function says so where it stands (eslint-disable-next-line max-lines-per-function -- why).
    files: ['packages/*/src/**/*.ts'],
    rules: {
      'max-lines-per-function': [
        'error',
        { max: 150, skipBlankLines: false, skipComments: false, IIFEs: true },
      ],
    },
  },
  {
    // The lab web view's page: plain browser JavaScript modules, served as written (packages/lab/src/web/assets/).
    files: ['packages/lab/src/web/assets/**/*.js'],
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

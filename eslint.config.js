// ESLint: typescript-eslint's type-checked rules over the sources, tests and scripts; Prettier owns formatting.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', '.bench/', 'runs/', '.mindsdb/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `_` marks a parameter a signature requires but the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // One import statement per module (a type-only one beside it allowed): doors gather a folder's names into one module.
      'no-duplicate-imports': ['error', { allowSeparateTypeImports: true }],
    },
  },
  // The sources' functions stay short enough to read at once; tests and scripts may run longer.
  { files: ['src/**/*.ts'], rules: { 'max-lines-per-function': ['error', { max: 100 }] } },
  // Plain JavaScript (this file, the demo scripts) is outside the TypeScript project: no type information to check with.
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    // Merged, not replaced: disableTypeChecked's parserOptions are what keep the project service off these files.
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', fetch: 'readonly' },
    },
  },
  prettier,
);

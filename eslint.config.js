import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'bench/**', 'data/**', 'coverage/**', '.tap/**'] }),
  {
    rules: {
      // tables of fields (TypeBox schemas, fixtures) keep several properties on a line
      '@stylistic/object-property-newline': 'off',
      // TypeBox's idiom: a schema const and its Static type share a name
      '@typescript-eslint/no-redeclare': 'off',
      // a cleanup registered before the resource it closes exists reads the variable first
      'prefer-const': ['error', { destructuring: 'all', ignoreReadBeforeAssign: true }],
      // a line reads whole on a screen and in a side-by-side diff
      '@stylistic/max-len': ['error', { code: 120 }]
    }
  }
]

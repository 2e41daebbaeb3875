// The bench's lint (npm run bench:lint, run from the project's root): the product's config, which
// leaves bench/ out of the product's lint, with bench/ let in and its generated folders left out.
import product from '../eslint.config.js'

const generated = ['bench/data/**', 'bench/out/**']
export default product.map((config) => config.ignores?.includes('bench/**')
  ? { ...config, ignores: [...config.ignores.filter((pattern) => pattern !== 'bench/**'), ...generated] }
  : config)

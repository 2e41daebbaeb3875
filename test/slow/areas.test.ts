// The property check of test/routes/areas.test.ts at a larger scale: more sites, routes and boxes,
// other seeds.
import t from 'tap'
import { checkAreas } from '../areas-property.ts'

for (const seed of ['areas-slow-1', 'areas-slow-2']) {
  t.test(`random routes and boxes against brute force over every site (${seed})`, async (t) => {
    await checkAreas(t, { seed, sites: 12000, routes: 1500, boxes: 1500 })
  })
}

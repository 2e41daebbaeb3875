import { Type } from '@sinclair/typebox'

export const CategoryList = Type.Object({
  categories: Type.Array(Type.Object({
    id: Type.Integer({ description: 'Category ID, as category_id takes it' }),
    name: Type.String()
  }), { description: 'The categories this partner may search, ascending' })
}, { description: 'The categories this partner may use' })

export const TagList = Type.Object({
  tags: Type.Array(Type.Object({
    tag: Type.String({ description: 'The tag, as tag= takes it' }),
    sites: Type.Integer({ description: 'Sites with this tag that this partner may see' })
  }), { description: 'Tags with at least one such site, by tag' })
}, { description: 'The tags of the dataset this partner is served from' })

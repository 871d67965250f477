// The property filter operators the console's forms offer, as PostHog names them.

// eventOperators are those of event property filters: an insight's, a dashboard's.
export const eventOperators = [
  ['exact', 'equals'],
  ['is_not', 'does not equal'],
  ['icontains', 'contains'],
  ['not_icontains', 'does not contain'],
  ['regex', 'matches regex'],
  ['gt', 'greater than'],
  ['lt', 'less than'],
  ['is_set', 'is set'],
  ['is_not_set', 'is not set'],
];

// personOperators are those of a cohort's person filters, which queries read; a flag's
// condition offers them too, and dates.
export const personOperators = [
  ['exact', 'equals'],
  ['is_not', 'does not equal'],
  ['icontains', 'contains'],
  ['not_icontains', 'does not contain'],
  ['regex', 'matches regex'],
  ['not_regex', 'does not match regex'],
  ['gt', 'greater than'],
  ['gte', 'greater than or equal'],
  ['lt', 'less than'],
  ['lte', 'less than or equal'],
  ['is_set', 'is set'],
  ['is_not_set', 'is not set'],
];

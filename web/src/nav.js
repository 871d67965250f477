// The console's screens in a project, in the order of the menu: [path under the
// project, label].
export const screens = [
  ['activity', 'Activity'],
  ['insights', 'Insights'],
  ['dashboards', 'Dashboards'],
  ['web', 'Web analytics'],
  ['persons', 'Persons'],
  ['sql', 'SQL'],
  ['feature_flags', 'Feature flags'],
  ['batch_exports', 'Batch exports'],
  ['settings', 'Settings'],
];

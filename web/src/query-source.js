// A module of its own, so that screens of the first load (the insights list) name an
// insight's kind without loading the charts that draw it.

// sourceOf unwraps the query an insight stores (InsightVizNode, DataTableNode,
// DataVisualizationNode) to the query that ran.
export function sourceOf(query) {
  return query && query.source ? query.source : query;
}

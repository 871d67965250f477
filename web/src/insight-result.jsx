// An insight's result drawn as its query says: trends as a chart (line, bars, stacked,
// a number, a table or a bar list of totals, by trendsFilter.display), funnels as
// steps with conversion, retention, stickiness and lifecycle as insight-kinds.jsx
// draws them, paths as a Sankey diagram, a web analytics card as the Web analytics
// screen draws it (web-result.jsx: the overview's numbers, a table's rows), events and
// SQL as tables. The insight screen, dashboard
// tiles and public dashboards all draw results through this one component.
import { useState } from 'preact/hooks';
import { BarList, TimeChart, inProgressFrom, longDate } from './chart.jsx';
import { LifecycleResult, RetentionResult, StickinessResult } from './insight-kinds.jsx';
import { PersonsDialog } from './persons-dialog.jsx';
import { sourceOf } from './query-source.js';
import { Sankey } from './sankey.jsx';
import { Table, format, relativeTime } from './ui.jsx';
import { WebOverviewTiles, WebStatsTable } from './web-result.jsx';


// displays are PostHog's trendsFilter.display values and what hedge draws for each.
export const displays = [
  ['ActionsLineGraph', 'Line'],
  ['ActionsBar', 'Bars'],
  ['ActionsStackedBar', 'Stacked bars'],
  ['BoldNumber', 'Number'],
  ['ActionsBarValue', 'Totals'],
  ['ActionsTable', 'Table'],
];

// totalDisplays show one value per line for the whole range, which hedge answers as
// each line's aggregated_value (as PostHog does): unique users over a week are the
// persons of the week, not the sum of each day's.
export const totalDisplays = ['BoldNumber', 'ActionsPie', 'ActionsBarValue', 'ActionsTable', 'WorldMap'];

// totalOf is a line's value over the whole range: its aggregated_value, or for an
// answer computed without one (per interval) the sum of its intervals.
export function totalOf(line) {
  return line.aggregated_value ?? line.count ?? 0;
}

// seriesLabel names a trends line: the breakdown value when there is one, and in a
// comparison the previous period's lines say so.
export function seriesLabel(line) {
  const previous = line.compare_label === 'previous' ? ' (previous period)' : '';
  if (line.breakdown_value !== undefined && line.breakdown_value !== null) {
    const v = Array.isArray(line.breakdown_value) ? line.breakdown_value.join(', ') : String(line.breakdown_value);
    return (v === '$$_posthog_breakdown_other_$$' ? 'Other' : v === '$$_posthog_breakdown_null_$$' || v === '' ? '(none)' : v) + previous;
  }
  return line.label + previous;
}

// InsightResult draws result, the answer to query. timezone is the project's, which
// trends count intervals in (the browser's when not given). With project and ran (the
// query exactly as it ran for result), a trend's points, a retention's cohorts, a
// stickiness' and a lifecycle's bars and a paths' edges and nodes open the persons
// behind them.
export function InsightResult({ query, result, title, height, timezone, project, ran }) {
  const q = sourceOf(query);
  if (!q || result === undefined || result === null) return <p class="empty">No result yet.</p>;
  switch (q.kind) {
    case 'TrendsQuery':
      return <TrendsResult query={q} lines={result} title={title} height={height} timezone={timezone} project={project} ran={ran} />;
    case 'FunnelsQuery':
      return <FunnelResult steps={result} title={title} project={project} ran={ran} />;
    case 'RetentionQuery':
      return <RetentionResult query={q} cohorts={result} title={title} height={height} project={project} ran={ran} />;
    case 'StickinessQuery':
      return <StickinessResult query={q} lines={result} title={title} height={height} project={project} ran={ran} />;
    case 'LifecycleQuery':
      return <LifecycleResult query={q} lines={result} title={title} height={height} timezone={timezone} project={project} ran={ran} />;
    case 'PathsQuery':
      return Array.isArray(result) ? <Sankey title={title} edges={result} height={height} project={project} ran={ran} /> : <p class="empty">No result yet.</p>;
    case 'WebOverviewQuery':
      return <WebOverviewTiles items={result.results} />;
    case 'WebStatsTableQuery':
      return <WebStatsTable by={q.breakdownBy} result={result} />;
    default:
      return <RowsResult result={result} />;
  }
}

const other = '$$_posthog_breakdown_other_$$';

// drillable says whether the persons behind line's points can be listed: a series'
// line (not a formula's) of a math that counts persons' events (not unique_group), and
// not a breakdown's Other, which gathers many values.
export function drillable(ran, line) {
  if (!ran || ran.kind !== 'TrendsQuery' || (ran.trendsFilter && ran.trendsFilter.formula)) return false;
  const order = line.action && line.action.order;
  if (typeof order !== 'number' || !ran.series || !ran.series[order]) return false;
  if (ran.series[order].math === 'unique_group' || (line.action && line.action.math === 'unique_group')) return false;
  const b = line.breakdown_value;
  return !(Array.isArray(b) || b === other);
}

// actorsSource is the InsightActorsQuery of the point of line at interval j of ran.
function actorsSource(ran, line, j) {
  const source = { kind: 'InsightActorsQuery', source: ran, day: line.days[j], series: line.action.order };
  if (ran.breakdownFilter && line.breakdown_value !== undefined && line.breakdown_value !== null) source.breakdown = line.breakdown_value;
  if (line.compare_label) source.compare = line.compare_label;
  return source;
}

// TrendsResult draws a trend. A number is its first line's total, as PostHog's is:
// the lines of other series count other things, which do not add up.
function TrendsResult({ query, lines, title, height, timezone, project, ran }) {
  // The point whose persons are shown: {line, j, opener}, opener the element focus
  // goes back to when the dialog closes.
  const [point, setPoint] = useState(null);
  if (!Array.isArray(lines) || lines.length === 0) return <p class="empty">No events in this range.</p>;
  const display = (query.trendsFilter && query.trendsFilter.display) || 'ActionsLineGraph';
  const canDrill = !!(project && ran);
  const series = lines.map((l) => ({
    label: seriesLabel(l),
    data: l.data,
    total: totalOf(l),
    settled: l.compare_label === 'previous',
    drillable: canDrill && drillable(ran, l),
  }));
  if (display === 'BoldNumber') {
    const total = series[0].total;
    return (
      <p class="bold-number" aria-label={`${title}: ${format(total)}`} title={series[0].label}>
        {format(total)}
      </p>
    );
  }
  if (display === 'ActionsBarValue' || display === 'ActionsPie') {
    return <BarList title={title} items={series.map((s) => ({ label: s.label, value: s.total }))} />;
  }
  if (display === 'ActionsTable') {
    return (
      <Table
        caption={title}
        columns={[
          {
            key: 'label',
            label: 'Series',
            render: (r) => (
              <span class="clip" title={r.label}>
                {r.label}
              </span>
            ),
          },
          { key: 'total', label: 'Total', numeric: true },
        ]}
        rows={series}
      />
    );
  }
  const kind = display === 'ActionsBar' ? 'bar' : display === 'ActionsStackedBar' || display === 'ActionsAreaGraph' ? 'stacked' : 'line';
  const days = lines[0].days || [];
  const zone = timezone || Intl.DateTimeFormat().resolvedOptions().timeZone;
  const current = inProgressFrom(days, query.interval || 'day', zone);
  const drill = canDrill ? (i, j, opener) => setPoint({ line: lines[i], label: series[i].label, j, opener }) : undefined;
  const closed = () => {
    const opener = point && point.opener;
    setPoint(null);
    if (opener && opener.isConnected) opener.focus();
  };
  return (
    <>
      <TimeChart title={title} labels={days} series={series} display={kind} height={height} current={current} drill={drill} />
      {point && (
        <PersonsDialog
          key={`${lines.indexOf(point.line)}-${point.j}`}
          project={project}
          source={actorsSource(ran, point.line, point.j)}
          title={`${point.label} on ${longDate(point.line.days[point.j])}`}
          close={closed}
        />
      )}
    </>
  );
}

// FunnelResult shows each step's count, its conversion from the first step and from
// the previous one, and the median time from the previous step. A breakdown (an
// array of step arrays) shows one funnel per value. With project and ran (the
// FunnelsQuery as it ran), a step's count lists the persons who reached it and its
// drop-off those who reached the step before and not it (PostHog's FunnelsActorsQuery).
function FunnelResult({ steps, title, project, ran }) {
  const [open, setOpen] = useState(null); // {source, title, opener}
  if (!Array.isArray(steps) || steps.length === 0) return <p class="empty">No one entered this funnel in this range.</p>;
  if (Array.isArray(steps[0])) {
    return (
      <div class="funnels">
        {steps.map((s) => (
          <section>
            <h3>{funnelValue(s[0] && s[0].breakdown_value)}</h3>
            <FunnelResult steps={s} title={title} project={project} ran={ran} />
          </section>
        ))}
      </div>
    );
  }
  const first = steps[0].count || 0;
  // A breakdown's Other gathers many values: its persons are not listed.
  const value = steps[0].breakdown_value;
  const canDrill = !!(project && ran && ran.kind === 'FunnelsQuery') && value !== 'Other';
  const drill = (step, label, e) =>
    setOpen({
      source: { kind: 'FunnelsActorsQuery', source: ran, funnelStep: step, ...(value !== undefined && value !== null ? { funnelStepBreakdown: value } : {}) },
      title: label,
      opener: e.currentTarget,
    });
  return (
    <>
      <ol class="funnel" aria-label={title}>
        {steps.map((s, i) => {
          const fromFirst = first ? (100 * s.count) / first : 0;
          const fromPrev = i === 0 ? 100 : steps[i - 1].count ? (100 * s.count) / steps[i - 1].count : 0;
          const name = s.custom_name || s.name || 'Any event';
          const dropped = i > 0 ? steps[i - 1].count - s.count : 0;
          return (
            <li>
              <div class="funnel-head">
                <span class="funnel-step">
                  {i + 1}. {name}
                </span>
                <span>
                  {canDrill && s.count > 0 ? (
                    <button type="button" class="link" aria-label={`${format(s.count)} persons reached ${name}: list them`} onClick={(e) => drill(i + 1, `Reached step ${i + 1}, ${name}`, e)}>
                      <strong>{format(s.count)}</strong>
                    </button>
                  ) : (
                    <strong>{format(s.count)}</strong>
                  )}{' '}
                  <span class="muted">({fromFirst.toFixed(1)}%)</span>
                </span>
              </div>
              <div class="funnel-track" aria-hidden="true">
                <span class="funnel-bar" style={{ width: `${fromFirst}%` }} />
              </div>
              {i > 0 && (
                <p class="muted funnel-note">
                  {fromPrev.toFixed(1)}% of the previous step
                  {s.median_conversion_time != null && <>, median {duration(s.median_conversion_time)}</>}
                  {canDrill && dropped > 0 && (
                    <>
                      {', '}
                      <button type="button" class="link" aria-label={`${format(dropped)} dropped off before ${name}: list them`} onClick={(e) => drill(-(i + 1), `Dropped off before step ${i + 1}, ${name}`, e)}>
                        {format(dropped)} dropped off
                      </button>
                    </>
                  )}
                </p>
              )}
            </li>
          );
        })}
      </ol>
      {open && (
        <PersonsDialog
          project={project}
          source={open.source}
          title={open.title}
          count={created}
          close={() => {
            const opener = open.opener;
            setOpen(null);
            if (opener && opener.isConnected) opener.focus();
          }}
        />
      )}
    </>
  );
}

// funnelValue names a funnel's breakdown value.
function funnelValue(v) {
  return (Array.isArray(v) ? v.join(', ') : v) || '(none)';
}

// created is a funnel step's persons' column: when each person was first seen.
const created = { column: 'created_at', label: 'First seen', show: (v) => (v ? relativeTime(v) : '') };

// duration says a number of seconds as a person would.
export function duration(seconds) {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

// RowsResult is a result of columns and rows (EventsQuery, HogQLQuery).
function RowsResult({ result }) {
  const columns = (result.columns || []).map((c, i) => ({ key: i, label: c }));
  const rows = result.results || (Array.isArray(result) ? result : []);
  return <Table columns={columns} rows={rows} />;
}

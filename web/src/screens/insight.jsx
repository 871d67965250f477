// The insight builder: a query of one of PostHog's six insight kinds (trends, funnels,
// retention, paths, stickiness, lifecycle) built from fields, run by the query API as
// it changes, drawn by InsightResult, saved as an insight (InsightVizNode) and
// put on dashboards. The query being built lives in the URL (?q=), so a link
// reproduces an unsaved insight, and a saved one's unsaved changes.
import { useState } from 'preact/hooks';
import { api, hogql, query } from '../api.js';
import { InsightResult, displays, seriesLabel, totalDisplays, totalOf } from '../insight-result.jsx';
import { sourceOf } from '../query-source.js';
import { Link, navigate, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, downloadCSV, relativeTime, useAsync } from '../ui.jsx';
import { webBreakdowns } from '../web-result.jsx';
import { filterLabel } from './dashboard-filters.jsx';
import {
  BreakdownField,
  DateRangeFields,
  Filters,
  FunnelFields,
  IntervalField,
  PathsFields,
  RetentionFields,
  SeriesFields,
  cleanFilters,
  fieldError,
} from './insight-fields.jsx';
import { Deleted, useRequest } from './manage.jsx';

// The suggestions: events and event property keys seen in the last 30 days, most
// frequent first.
const eventsSQL = 'SELECT event, count() FROM events WHERE timestamp > now() - INTERVAL 30 DAY GROUP BY event ORDER BY 2 DESC, 1 LIMIT 100';
const keysSQL =
  'SELECT key, count() FROM (SELECT unnest(json_keys(properties)) AS key FROM events WHERE timestamp > now() - INTERVAL 30 DAY) GROUP BY key ORDER BY 2 DESC LIMIT 200';

// placed are the fields fieldError puts an error under; any other shows above the result.
const placed = ['series', 'interval', 'date_from', 'date_to', 'breakdown', 'properties', 'window', 'window_unit', 'order'];
placed.push('target', 'returning', 'retention_type', 'period', 'periods', 'include', 'start', 'end', 'steps');

// kinds are the insight types, as PostHog's tabs name them, in their order.
const kinds = [
  ['TrendsQuery', 'Trends'],
  ['FunnelsQuery', 'Funnel'],
  ['RetentionQuery', 'Retention'],
  ['PathsQuery', 'Paths'],
  ['StickinessQuery', 'Stickiness'],
  ['LifecycleQuery', 'Lifecycle'],
];

// withSeries are the kinds built of series of events.
const withSeries = ['TrendsQuery', 'FunnelsQuery', 'StickinessQuery', 'LifecycleQuery'];

const node = (event) => ({ kind: 'EventsNode', event, name: event });

const blank = {
  TrendsQuery: {
    kind: 'TrendsQuery',
    series: [{ ...node('$pageview'), math: 'total' }],
    interval: 'day',
    dateRange: { date_from: '-7d' },
    trendsFilter: { display: 'ActionsLineGraph' },
  },
  FunnelsQuery: {
    kind: 'FunnelsQuery',
    series: [node('$pageview'), node('')],
    dateRange: { date_from: '-30d' },
    funnelsFilter: { funnelOrderType: 'ordered', funnelVizType: 'steps', funnelWindowInterval: 14, funnelWindowIntervalUnit: 'day' },
  },
  RetentionQuery: {
    kind: 'RetentionQuery',
    retentionFilter: {
      period: 'Day',
      totalIntervals: 8,
      retentionType: 'retention_first_time',
      targetEntity: { id: '$pageview', name: '$pageview', type: 'events' },
      returningEntity: { id: '$pageview', name: '$pageview', type: 'events' },
    },
  },
  PathsQuery: {
    kind: 'PathsQuery',
    dateRange: { date_from: '-7d' },
    pathsFilter: { includeEventTypes: ['$pageview'], stepLimit: 5 },
  },
  StickinessQuery: {
    kind: 'StickinessQuery',
    series: [node('$pageview')],
    interval: 'day',
    dateRange: { date_from: '-7d' },
    stickinessFilter: { display: 'ActionsLineGraph' },
  },
  LifecycleQuery: {
    kind: 'LifecycleQuery',
    series: [node('$pageview')],
    interval: 'day',
    dateRange: { date_from: '-7d' },
  },
};

// eventsOf are the events a query is about, in order: its series', or a retention's
// cohort and returning events.
function eventsOf(source) {
  if (Array.isArray(source.series)) return source.series.map((s) => s.event ?? '');
  const f = source.retentionFilter;
  if (f) return [(f.targetEntity && f.targetEntity.id) || '', (f.returningEntity && f.returningEntity.id) || ''];
  return [];
}

// switchKind turns a query into another kind, keeping what both have: the events (a
// retention's cohort and returning events are its first two), the filters, the date
// range and interval where the other kind has them, a breakdown between trends and
// funnels.
function switchKind(source, kind) {
  const next = { ...blank[kind], properties: source.properties };
  if (source.dateRange && blank[kind].dateRange) next.dateRange = source.dateRange;
  if (source.interval && blank[kind].interval) next.interval = source.interval;
  if (kind === 'TrendsQuery' || kind === 'FunnelsQuery') next.breakdownFilter = source.breakdownFilter;
  const events = eventsOf(source);
  if (!events.length) return next;
  if (kind === 'TrendsQuery') next.series = events.map((e) => ({ ...node(e), math: 'total' }));
  else if (kind === 'FunnelsQuery') next.series = (events.length > 1 ? events : [...events, '']).map(node);
  else if (kind === 'StickinessQuery') next.series = events.map(node);
  else if (kind === 'LifecycleQuery') next.series = [node(events[0])];
  else if (kind === 'RetentionQuery') {
    const entity = (e) => (e ? { id: e, name: e, type: 'events' } : { id: null, name: 'All events', type: 'events' });
    next.retentionFilter = { ...next.retentionFilter, targetEntity: entity(events[0]), returningEntity: entity(events[1] ?? events[0]) };
  }
  return next;
}

// parseQ reads the query of the URL; anything but an insight kind's query is ignored.
function parseQ(s) {
  try {
    const q = JSON.parse(s);
    return q && blank[q.kind] && (Array.isArray(q.series) || !withSeries.includes(q.kind)) ? q : null;
  } catch {
    return null;
  }
}

// sent is the query as hedge runs it: an empty event is any event; filters (the
// query's and each series') not yet filled in and an empty breakdown are left out; a
// comparison's value is a number.
function sent(source) {
  const q = { ...source };
  if (Array.isArray(source.series)) {
    q.series = source.series.map((s) => {
      const out = { ...s, event: s.event || null, name: s.event || 'All events' };
      const props = cleanFilters(s.properties);
      if (props.length) out.properties = props;
      else delete out.properties;
      return out;
    });
  }
  const props = cleanFilters(source.properties);
  if (props.length) q.properties = props;
  else delete q.properties;
  if (!source.breakdownFilter || !source.breakdownFilter.breakdown) delete q.breakdownFilter;
  // A formula combines series: with one left, the series is shown as it is.
  if (q.trendsFilter && q.trendsFilter.formula && source.series.length < 2) q.trendsFilter = { ...q.trendsFilter, formula: undefined };
  if (q.pathsFilter) {
    const f = { ...q.pathsFilter };
    for (const k of ['startPoint', 'endPoint']) if (!f[k]) delete f[k];
    q.pathsFilter = f;
  }
  return q;
}

export function Insight({ project, params, shortId }) {
  const saved = useAsync(
    (signal) =>
      shortId
        ? api(`/api/projects/${project}/insights/?short_id=${encodeURIComponent(shortId)}`, { signal }).then((p) => p.results[0] || null)
        : Promise.resolve(null),
    [project, shortId],
  );
  if (saved.error) return <Page title="Insight"><ErrorNote error={saved.error} /></Page>;
  if (saved.loading) return <Page title="Insight"><Loading /></Page>;
  if (shortId && !saved.data) {
    return (
      <Page title="Insight not found">
        <p>There is no insight {shortId} in this project; it may have been deleted.</p>
      </Page>
    );
  }
  const kind = saved.data && (sourceOf(saved.data.query) || {}).kind;
  if (kind === 'WebOverviewQuery' || kind === 'WebStatsTableQuery') return <WebInsight key={saved.data.id} project={project} initial={saved.data} />;
  // Keyed by the insight, so opening another (a duplicate just made) starts afresh.
  return <Builder key={saved.data ? saved.data.id : 'new'} project={project} params={params} initial={saved.data} />;
}

function Builder({ project, params, initial }) {
  const [record, setRecord] = useState(initial);
  const [deleted, setDeleted] = useState(false);
  const savedSource = record ? sourceOf(record.query) : null;
  const source = parseQ(params.get('q')) || savedSource || blank.TrendsQuery;
  const set = (next) => setQuery({ q: JSON.stringify(next) });
  const body = sent(source);
  const isTrends = source.kind === 'TrendsQuery';
  const display = (isTrends && source.trendsFilter && source.trendsFilter.display) || 'ActionsLineGraph';
  // The display is drawn from the answer, which is the same for every display of
  // intervals, and for every display of totals (totalDisplays): a change within one
  // kind runs nothing.
  const totals = isTrends && totalDisplays.includes(display);
  const formula = (isTrends && source.trendsFilter && source.trendsFilter.formula) || '';
  const runKey = JSON.stringify({ ...body, trendsFilter: undefined, formula, totals });
  const run = useAsync((signal) => query(project, body, signal).then((r) => ({ ...r, kind: body.kind, totals, ran: body })), [project, runKey]);
  const suggest = useAsync(
    (signal) =>
      Promise.all([hogql(project, eventsSQL, signal), hogql(project, keysSQL, signal)]).then(([e, k]) => ({
        events: e.results.map((r) => r[0]),
        keys: k.results.map((r) => r[0]),
      })),
    [project],
  );
  const error = fieldError(run.error, source);
  const fresh = run.data && run.data.kind === source.kind && run.data.totals === totals ? run.data : null;
  const title = (record && record.name) || 'Untitled insight';
  const dirty = record && JSON.stringify(sent(source)) !== JSON.stringify(sent(savedSource));
  // Charts of their own have a CSV button of their own.
  const drawsChart = (isTrends && ['ActionsLineGraph', 'ActionsBar', 'ActionsStackedBar'].includes(display)) || ['StickinessQuery', 'LifecycleQuery'].includes(source.kind);
  const isPaths = source.kind === 'PathsQuery';

  if (deleted) {
    return (
      <Deleted
        title="Insight deleted"
        name={title}
        listHref={projectPath(project, 'insights')}
        listLabel="Back to insights"
        undo={async () => {
          setRecord(await api(`/api/projects/${project}/insights/${record.id}/`, { method: 'PATCH', body: { deleted: false } }));
          setDeleted(false);
        }}
      />
    );
  }
  return (
    <Page title={record ? title : 'New insight'} wide>
      <SaveBar
        project={project}
        record={record}
        setRecord={setRecord}
        source={body}
        dirty={dirty}
        forDashboard={Number(params.get('dashboard')) || null}
        onDeleted={() => setDeleted(true)}
      />
      <div class="insight-layout">
        <form class="card insight-form" aria-labelledby="query-title" onSubmit={(e) => e.preventDefault()}>
          <h2 id="query-title">Query</h2>
          <fieldset class="kind-switch">
            <legend>Insight type</legend>
            {kinds.map(([kind, label]) => (
              <label>
                <input type="radio" name="kind" value={kind} checked={source.kind === kind} onChange={() => set(switchKind(source, kind))} /> {label}
              </label>
            ))}
          </fieldset>
          {withSeries.includes(source.kind) && <SeriesFields source={source} set={set} error={error} project={project} />}
          {['TrendsQuery', 'StickinessQuery', 'LifecycleQuery'].includes(source.kind) && <IntervalField source={source} set={set} error={error} />}
          {source.kind === 'FunnelsQuery' && <FunnelFields source={source} set={set} error={error} />}
          {source.kind === 'RetentionQuery' && <RetentionFields source={source} set={set} error={error} />}
          {isPaths && <PathsFields source={source} set={set} error={error} />}
          {source.kind !== 'RetentionQuery' && <DateRangeFields source={source} set={set} error={error} />}
          {(isTrends || source.kind === 'FunnelsQuery') && <BreakdownField source={source} set={set} error={error} />}
          <Filters source={source} set={set} error={error} project={project} />
          {isTrends && source.series.length > 1 && (
            <Field label="Formula" name="formula" error={error} hint="Series by letter: A/B*100; empty shows each series">
              <input
                value={formula}
                placeholder="A/B"
                onChange={(e) => set({ ...source, trendsFilter: { ...source.trendsFilter, formula: e.target.value.trim() || undefined } })}
              />
            </Field>
          )}
          {isTrends && (
            <label class="check">
              <input
                type="checkbox"
                id="field-compare"
                checked={!!(source.compareFilter && source.compareFilter.compare)}
                onChange={(e) => set({ ...source, compareFilter: e.target.checked ? { compare: true } : undefined })}
              />{' '}
              Compare with the previous period
            </label>
          )}
          {isTrends && (
            <Field label="Display" name="display">
              <select value={display} onChange={(e) => set({ ...source, trendsFilter: { ...source.trendsFilter, display: e.target.value } })}>
                {displays.map(([v, label]) => (
                  <option value={v}>{label}</option>
                ))}
              </select>
            </Field>
          )}
          {source.kind === 'StickinessQuery' && (
            <Field label="Display" name="display">
              <select
                value={(source.stickinessFilter && source.stickinessFilter.display) || 'ActionsLineGraph'}
                onChange={(e) => set({ ...source, stickinessFilter: { ...source.stickinessFilter, display: e.target.value } })}
              >
                <option value="ActionsLineGraph">Line</option>
                <option value="ActionsBar">Bars</option>
              </select>
            </Field>
          )}
          <datalist id="event-names">{suggest.data && suggest.data.events.map((e) => <option value={e} />)}</datalist>
          <datalist id="property-keys">{suggest.data && suggest.data.keys.map((k) => <option value={k} />)}</datalist>
        </form>
        <section class="card insight-result" aria-labelledby="result-title">
          <div class="result-head">
            <h2 id="result-title">{resultTitles[source.kind]}</h2>
            {fresh && !drawsChart && (
              <button type="button" class="secondary" onClick={() => downloadResult(title, source, fresh.results)}>
                CSV
              </button>
            )}
          </div>
          <p class="muted" role="status">
            {run.loading ? 'Updating…' : fresh ? `Times in ${fresh.timezone}, the project's time zone.` : ''}
          </p>
          <ErrorNote error={error} fields={placed} />
          {error && placed.includes(error.attr) && <p class="empty">hedge cannot run this query: see the field marked in red.</p>}
          {fresh && <InsightResult query={source} result={fresh.results} title={title} timezone={fresh.timezone} project={project} ran={fresh.ran} />}
        </section>
      </div>
    </Page>
  );
}

// resultTitles head each kind's result.
const resultTitles = { TrendsQuery: 'Trend', FunnelsQuery: 'Funnel', RetentionQuery: 'Retention', PathsQuery: 'Paths', StickinessQuery: 'Stickiness', LifecycleQuery: 'Lifecycle' };

// downloadResult saves what the chart's own CSV button does not: funnels, retention
// cohorts, paths' edges, and the displays of totals (each line's total over the range).
function downloadResult(title, source, results) {
  if (source.kind === 'PathsQuery') {
    downloadCSV(`${title}.csv`, ['source', 'target', 'paths', 'average_conversion_time_ms'], results.map((e) => [e.source, e.target, e.value, e.average_conversion_time]));
    return;
  }
  if (source.kind === 'RetentionQuery') {
    const periods = results.reduce((a, c) => Math.max(a, c.values.length), 0);
    const header = ['cohort', ...Array.from({ length: periods }, (_, k) => (k ? `period ${k}` : 'persons'))];
    downloadCSV(`${title}.csv`, header, results.map((c) => [c.date, ...c.values.map((v) => v.count)]));
    return;
  }
  if (source.kind === 'FunnelsQuery') {
    const funnels = Array.isArray(results[0]) ? results : [results];
    const rows = funnels.flatMap((steps) => steps.map((s, i) => [s.breakdown_value ?? '', i + 1, s.custom_name || s.name, s.count]));
    downloadCSV(`${title}.csv`, ['breakdown', 'step', 'event', 'persons'], rows);
    return;
  }
  if (totalDisplays.includes(source.trendsFilter && source.trendsFilter.display)) {
    downloadCSV(`${title}.csv`, ['series', 'total'], results.map((l) => [seriesLabel(l), totalOf(l)]));
    return;
  }
  const days = results.length ? results[0].days : [];
  downloadCSV(`${title}.csv`, ['date', ...results.map(seriesLabel)], days.map((d, j) => [d, ...results.map((l) => l.data[j])]));
}

// SaveBar names, saves and updates the insight, and puts it on dashboards. A new
// insight made from a dashboard's "Add insight" (forDashboard) is saved onto that
// dashboard and the user goes back to it. An insight the user may only view (it is on
// a dashboard they cannot edit: effective_privilege_level 21) can be explored but not
// changed, so the bar offers to save a copy instead of a Save that hedge would refuse.
// A saved insight is renamed by its Name field and "Save changes" (which saves the name
// with the query, changed or not), duplicated as PostHog does (a new insight of the
// saved query named "… (copy)", opened at once), and deleted (soft, onDeleted shows
// Undo) by those who may edit it.
function SaveBar({ project, record, setRecord, source, dirty, forDashboard, onDeleted }) {
  const [name, setName] = useState((record && record.name) || '');
  const [state, setState] = useState({ error: null, note: '' });
  const manage = useRequest();
  const viewOnly = record && record.effective_privilege_level < 37;
  const renamed = record && name.trim() !== (record.name || '');
  const duplicate = () =>
    manage.run(async () => {
      const body = { name: `${record.name || 'Untitled insight'} (copy)`, description: record.description, query: record.query };
      const made = await api(`/api/projects/${project}/insights/`, { method: 'POST', body });
      navigate(projectPath(project, `insights/${made.short_id}`));
    });
  const remove = () =>
    manage.run(async () => {
      await api(`/api/projects/${project}/insights/${record.id}/`, { method: 'PATCH', body: { deleted: true } });
      onDeleted();
    });
  const save = async (e) => {
    e.preventDefault();
    const body = { name: name.trim() || null, query: { kind: 'InsightVizNode', source } };
    try {
      if (record && !viewOnly) {
        setRecord(await api(`/api/projects/${project}/insights/${record.id}/`, { method: 'PATCH', body }));
        setQuery({ q: null });
        setState({ error: null, note: 'Saved.' });
      } else if (forDashboard && !record) {
        await api(`/api/projects/${project}/insights/`, { method: 'POST', body: { ...body, dashboards: [forDashboard] } });
        navigate(projectPath(project, `dashboard/${forDashboard}`));
      } else {
        const made = await api(`/api/projects/${project}/insights/`, { method: 'POST', body });
        navigate(projectPath(project, `insights/${made.short_id}`));
      }
    } catch (error) {
      setState({ error, note: '' });
    }
  };
  const label = viewOnly ? 'Save as a new insight' : record ? 'Save changes' : forDashboard ? 'Save to dashboard' : 'Save';
  return (
    <div class="card save-bar">
      {viewOnly && (
        <p class="view-only-note">
          <strong>View only.</strong> This insight is on a dashboard that only its editors may change. You can explore it here; saving makes a new insight of your own.
        </p>
      )}
      <form class="row" onSubmit={save} aria-label="Save insight">
        <Field label="Name" name="name" error={state.error}>
          <input value={name} placeholder="Untitled insight" onInput={(e) => setName(e.target.value)} />
        </Field>
        <button type="submit">{label}</button>
        <p class="muted" role="status">
          {dirty || renamed ? 'Unsaved changes.' : state.note}
        </p>
        {record && (
          <div class="manage-actions">
            <button type="button" class="secondary" disabled={manage.busy} onClick={duplicate}>
              Duplicate
            </button>
            <button
              type="button"
              class="secondary"
              disabled={manage.busy || viewOnly}
              title={viewOnly ? 'Only the editors of its dashboard may delete this insight.' : undefined}
              onClick={remove}
            >
              Delete
            </button>
          </div>
        )}
      </form>
      <ErrorNote error={state.error} fields={['name']} />
      <ErrorNote error={manage.error} />
      {record && !viewOnly && <AddToDashboard project={project} record={record} setRecord={setRecord} />}
    </div>
  );
}

// WebInsight is an insight saved from a card of Web analytics: not built from fields
// but shown as the card showed it (its overview or table), with its range and filters,
// refreshed on demand (?refresh=true), put on dashboards or deleted; "Open in Web
// analytics" shows the screen at its range and filters, where it can be changed and
// saved again.
function WebInsight({ project, initial }) {
  const [record, setRecord] = useState(initial);
  const [deleted, setDeleted] = useState(false);
  const manage = useRequest();
  // The list answers no results: the insight's own retrieve computes (or takes from
  // the cache) its result.
  const computed = useAsync((signal) => api(`/api/projects/${project}/insights/${initial.id}/`, { signal }).then(setRecord), [project, initial.id]);
  const q = sourceOf(record.query);
  const name = record.name || 'Untitled insight';
  const viewOnly = record.effective_privilege_level < 37;
  const props = Array.isArray(q.properties) ? q.properties : [];
  const from = (q.dateRange && q.dateRange.date_from) || '-7d';
  const open = `${projectPath(project, 'web')}?${new URLSearchParams({ date_from: from, ...(props.length ? { properties: JSON.stringify(props) } : {}) })}`;
  const refresh = () => manage.run(async () => setRecord(await api(`/api/projects/${project}/insights/${record.id}/?refresh=true`)));
  const remove = () =>
    manage.run(async () => {
      await api(`/api/projects/${project}/insights/${record.id}/`, { method: 'PATCH', body: { deleted: true } });
      setDeleted(true);
    });
  if (deleted) {
    const undo = async () => {
      setRecord(await api(`/api/projects/${project}/insights/${record.id}/`, { method: 'PATCH', body: { deleted: false } }));
      setDeleted(false);
    };
    return <Deleted title="Insight deleted" name={name} undo={undo} listHref={projectPath(project, 'insights')} listLabel="All insights" />;
  }
  return (
    <Page
      title={name}
      actions={
        <>
          <Link class="button secondary" href={open}>
            Open in Web analytics
          </Link>
          <button type="button" class="secondary" disabled={manage.busy} onClick={refresh}>
            Refresh
          </button>
          <button type="button" class="secondary" disabled={manage.busy || viewOnly} onClick={remove}>
            Delete
          </button>
        </>
      }
    >
      <p class="muted web-insight-about">
        Web analytics: {q.kind === 'WebOverviewQuery' ? 'overview' : ((webBreakdowns[q.breakdownBy] || {}).title || q.breakdownBy || '').toLowerCase()}, from{' '}
        <code>{from}</code>
        {props.length > 0 && <> where {props.map(filterLabel).join(' and ')}</>}.
        {record.last_refresh && <> Computed {relativeTime(record.last_refresh)}.</>}
      </p>
      <ErrorNote error={manage.error} />
      <div class="card web-insight" data-kind={q.kind}>
        {record.query_error ? (
          <p class="error-note">{record.query_error}</p>
        ) : record.last_refresh ? (
          <InsightResult query={record.query} result={record.result} title={name} />
        ) : computed.error ? (
          <ErrorNote error={computed.error} />
        ) : (
          <Loading label="Computing…" />
        )}
      </div>
      {!viewOnly && <AddToDashboard project={project} record={record} setRecord={setRecord} />}
    </Page>
  );
}

// AddToDashboard puts the insight on a dashboard the user picks, by name, among those
// it is not on yet and the user may edit; nothing is added until one is picked. It
// sets the insight's dashboards (PATCH), which gives it a tile on the one added.
function AddToDashboard({ project, record, setRecord }) {
  const list = useAsync((signal) => api(`/api/projects/${project}/dashboards/?limit=200`, { signal }), [project]);
  const [choice, setChoice] = useState('');
  const [state, setState] = useState({ error: null, added: null });
  const dashboards = (list.data && list.data.results) || [];
  const named = (d) => d.name || 'Untitled dashboard';
  const on = dashboards.filter((d) => record.dashboards.includes(d.id));
  const off = dashboards.filter((d) => !record.dashboards.includes(d.id) && d.effective_privilege_level >= 37);
  const add = async (e) => {
    e.preventDefault();
    const target = off.find((d) => d.id === Number(choice));
    if (!target) return;
    try {
      setRecord(await api(`/api/projects/${project}/insights/${record.id}/`, { method: 'PATCH', body: { dashboards: [...record.dashboards, target.id] } }));
      setChoice('');
      setState({ error: null, added: target });
    } catch (error) {
      setState({ error, added: null });
    }
  };
  if (!list.data) return <ErrorNote error={list.error} />;
  return (
    <form class="row add-dashboard" onSubmit={add} aria-label="Add to dashboard">
      {off.length > 0 && (
        <>
          <Field label="Add to dashboard" name="dashboard" error={state.error}>
            <select value={choice} required onChange={(e) => setChoice(e.target.value)}>
              <option value="" disabled>
                Choose a dashboard…
              </option>
              {off.map((d) => (
                <option value={String(d.id)}>{named(d)}</option>
              ))}
            </select>
          </Field>
          <button type="submit" class="secondary" disabled={!choice}>
            Add
          </button>
        </>
      )}
      <p class="muted" role="status">
        {state.added && (
          <>
            Added to <Link href={projectPath(project, `dashboard/${state.added.id}`)}>{named(state.added)}</Link>.{' '}
          </>
        )}
        {on.length ? `On ${on.map(named).join(', ')}.` : 'On no dashboard yet.'}
        {off.length === 0 && on.length === 0 && (
          <>
            {' '}
            <Link href={projectPath(project, 'dashboards')}>Make a dashboard</Link> to put it on one.
          </>
        )}
      </p>
      <ErrorNote error={state.error} fields={['dashboard']} />
    </form>
  );
}

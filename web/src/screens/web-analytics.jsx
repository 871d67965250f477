// Web analytics, as PostHog's: the overview tiles (visitors, views, sessions, session
// duration, bounce rate, each with its change from the period before) and cards of
// tables with tabs: pages, entry and exit pages; referrers and UTM sources, media and
// campaigns; device types, browsers and systems; countries. hedge computes every
// figure (WebOverviewQuery, WebStatsTableQuery); the screen only shows them. The range
// the comparison with the period before and the property filters are in the URL
// (?date_from=, ?compare=false, ?properties=), so a view can be shared; clicking a row's value adds it as a filter, as in PostHog. Each card can
// be saved as an insight, on a dashboard or not, with the range and filters it shows.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { Link, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, useAsync } from '../ui.jsx';
import { WebOverviewTiles, WebStatsTable, webBreakdowns } from '../web-result.jsx';
import { AddFilter, filterLabel } from './dashboard-filters.jsx';

// webRanges are the ranges offered, as PostHog's date_from values; each is compared
// with the period as long just before it.
const webRanges = [
  ['dStart', 'Today'],
  ['-24h', 'Last 24 hours'],
  ['-7d', 'Last 7 days'],
  ['-14d', 'Last 14 days'],
  ['-30d', 'Last 30 days'],
  ['-90d', 'Last 90 days'],
  ['mStart', 'This month'],
];
const defaultRange = '-7d';

// webCards are the cards of tables, as PostHog groups them: [id, heading, the
// breakdowns of its tabs].
const webCards = [
  ['paths', 'Paths', ['Page', 'InitialPage', 'ExitPage']],
  ['sources', 'Sources', ['InitialReferringDomain', 'InitialUTMSource', 'InitialUTMMedium', 'InitialUTMCampaign']],
  ['devices', 'Devices', ['DeviceType', 'Browser', 'OS']],
  ['geography', 'Geography', ['Country']],
];

// The rows a table shows.
const tableRows = 10;

// webFilters are the property filters of the URL (?properties=, a JSON list).
function webFilters(params) {
  try {
    const p = JSON.parse(params.get('properties') || '[]');
    return Array.isArray(p) ? p.filter((f) => f && typeof f === 'object' && f.key) : [];
  } catch {
    return []; // a hand-edited URL: no filters
  }
}

export function WebAnalytics({ project, params }) {
  const chosen = params.get('date_from');
  const range = webRanges.some(([v]) => v === chosen) ? chosen : defaultRange;
  const rangeName = webRanges.find(([v]) => v === range)[1];
  const properties = webFilters(params);
  const setProperties = (list) => setQuery({ properties: list.length ? JSON.stringify(list) : null });
  // pick adds a row's value as a filter on the property it is of, once.
  const pick = (by) => (value) => {
    const key = webBreakdowns[by].key;
    if (properties.some((p) => p.key === key && (p.operator || 'exact') === 'exact' && p.value === value)) return;
    setProperties([...properties, { key, value, operator: 'exact', type: 'event' }]);
  };
  // Each card's query: the URL's range, compared with the period before unless the
  // URL says not (?compare=false), and filters.
  const compare = params.get('compare') !== 'false';
  const base = { dateRange: { date_from: range, date_to: null }, properties, compareFilter: { compare } };
  const deps = range + compare + JSON.stringify(properties);
  const [saving, setSaving] = useState(null);
  return (
    <Page
      title="Web analytics"
      actions={
        <>
          <label class="inline-field">
            <input type="checkbox" id="web-compare" checked={compare} onChange={(e) => setQuery({ compare: e.target.checked ? null : 'false' })} />
            <span>Compare with the period before</span>
          </label>
          <label class="inline-field">
            <span>Date range</span>
            <select id="web-range" value={range} onChange={(e) => setQuery({ date_from: e.target.value === defaultRange ? null : e.target.value })}>
              {webRanges.map(([v, label]) => (
                <option value={v}>{label}</option>
              ))}
            </select>
          </label>
        </>
      }
    >
      <p class="muted web-note">
        Sessions are the events of one <code>$session_id</code>; a view is a <code>$pageview</code> or <code>$screen</code>. A session bounces
        when it has one view, no autocaptured click and lasts under 10 seconds. Click a value in a table to filter by it.
      </p>
      <Filters properties={properties} setProperties={setProperties} />
      <section class="web-overview" aria-labelledby="web-overview-title">
        <header class="web-card-head">
          <h2 id="web-overview-title">Overview</h2>
          <button
            type="button"
            class="secondary small web-save"
            onClick={() => setSaving({ name: `Web overview · ${rangeName}`, query: { kind: 'WebOverviewQuery', ...base } })}
          >
            Save as insight…<span class="sr-only"> (overview)</span>
          </button>
        </header>
        <Overview key={deps} project={project} q={{ kind: 'WebOverviewQuery', ...base }} />
      </section>
      <div class="web-tables">
        {webCards.map(([id, title, tabs]) => (
          <WebCard
            key={id}
            id={id}
            project={project}
            title={title}
            tabs={tabs}
            base={base}
            deps={deps}
            pick={pick}
            save={(by, q) => setSaving({ name: `${webBreakdowns[by].title} · ${rangeName}`, query: q })}
          />
        ))}
      </div>
      {saving && <SaveCard project={project} name={saving.name} q={saving.query} close={() => setSaving(null)} />}
    </Page>
  );
}

// Filters shows the view's property filters as removable chips, and a form to add
// one on an event's or its person's property.
function Filters({ properties, setProperties }) {
  const chip = (p) => (p.type === 'person' ? `Person ${filterLabel(p)}` : filterLabel(p));
  return (
    <section class="dash-filters web-filters" aria-label="Filters">
      <ul class="chips" aria-label="Property filters">
        {properties.map((p, i) => (
          <li class="chip">
            <span class="clip" title={chip(p)}>
              {chip(p)}
            </span>
            <button type="button" class="link" aria-label={`Remove filter ${chip(p)}`} onClick={() => setProperties(properties.filter((_, j) => j !== i))}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <AddFilter id="web-filter" types onAdd={(f) => setProperties([...properties, f])} />
      {properties.length > 0 && (
        <button type="button" class="link" onClick={() => setProperties([])}>
          Clear filters
        </button>
      )}
    </section>
  );
}

// Overview is the tiles of a WebOverviewQuery, compared with the period before.
function Overview({ project, q }) {
  const overview = useAsync((signal) => query(project, q, signal), [project]);
  if (overview.error) return <ErrorNote error={overview.error} />;
  if (!overview.data) return <Loading label="Loading the overview…" />;
  return <WebOverviewTiles items={overview.data.results} />;
}

// WebCard is a card of tables, one tab shown at a time (its WebStatsTableQuery).
function WebCard({ id, project, title, tabs, base, deps, pick, save }) {
  const [by, setBy] = useState(tabs[0]);
  const meta = webBreakdowns[by];
  const q = { kind: 'WebStatsTableQuery', breakdownBy: by, ...base, includeBounceRate: meta.bounce, limit: tableRows };
  const headId = `web-${id}`;
  const select = (i) => {
    setBy(tabs[i]);
    document.getElementById(`web-tab-${tabs[i]}`).focus();
  };
  return (
    <section class="card web-table" data-breakdown={by} aria-labelledby={headId}>
      <header class="web-card-head">
        <h2 id={headId}>{tabs.length > 1 ? title : meta.title}</h2>
        <button type="button" class="secondary small web-save" onClick={() => save(by, q)}>
          Save as insight…<span class="sr-only"> ({meta.title.toLowerCase()})</span>
        </button>
      </header>
      {tabs.length > 1 && (
        <div class="web-tabs" role="tablist" aria-label={title}>
          {tabs.map((t, i) => (
            <button
              type="button"
              role="tab"
              id={`web-tab-${t}`}
              data-tab={t}
              aria-selected={t === by ? 'true' : 'false'}
              aria-controls={`web-panel-${id}`}
              tabindex={t === by ? 0 : -1}
              onClick={() => setBy(t)}
              onKeyDown={(e) => {
                if (e.key === 'ArrowRight') select((i + 1) % tabs.length);
                if (e.key === 'ArrowLeft') select((i + tabs.length - 1) % tabs.length);
              }}
            >
              {webBreakdowns[t].tab}
            </button>
          ))}
        </div>
      )}
      <div id={`web-panel-${id}`} role={tabs.length > 1 ? 'tabpanel' : undefined} aria-labelledby={tabs.length > 1 ? `web-tab-${by}` : undefined}>
        <Table key={by + deps} project={project} q={q} by={by} labelledBy={tabs.length > 1 ? `web-tab-${by}` : headId} pick={pick(by)} />
      </div>
    </section>
  );
}

// Table is one WebStatsTableQuery's answer, its rows' values filters to add.
function Table({ project, q, by, labelledBy, pick }) {
  const table = useAsync((signal) => query(project, q, signal), [project]);
  if (table.error) return <ErrorNote error={table.error} />;
  if (!table.data) return <Loading label={`Loading ${webBreakdowns[by].title.toLowerCase()}…`} />;
  return (
    <>
      <WebStatsTable by={by} result={table.data} labelledBy={labelledBy} onPick={pick} />
      {table.data.hasMore && <p class="muted web-more">The top {tableRows} of more.</p>}
    </>
  );
}

// SaveCard saves a card's query as an insight (POST insights/), on the dashboard the
// user picks among those they may edit, or on none: a native modal <dialog>.
function SaveCard({ project, name: initial, q, close }) {
  const ref = useRef();
  const list = useAsync((signal) => api(`/api/projects/${project}/dashboards/?limit=200`, { signal }), [project]);
  const [name, setName] = useState(initial);
  const [dashboard, setDashboard] = useState('');
  const [state, setState] = useState({ busy: false, error: null, saved: null });
  useEffect(() => ref.current.showModal(), []);
  const dashboards = ((list.data && list.data.results) || []).filter((d) => d.effective_privilege_level >= 37);
  const named = (d) => d.name || 'Untitled dashboard';
  const submit = async (e) => {
    e.preventDefault();
    setState({ busy: true, error: null, saved: null });
    try {
      const body = { name: name.trim(), query: q };
      if (dashboard) body.dashboards = [Number(dashboard)];
      const insight = await api(`/api/projects/${project}/insights/`, { method: 'POST', body });
      setState({ busy: false, error: null, saved: { insight, on: dashboards.find((d) => d.id === Number(dashboard)) } });
    } catch (error) {
      setState({ busy: false, error, saved: null });
    }
  };
  const saved = state.saved;
  return (
    <dialog ref={ref} class="modal" aria-labelledby="web-save-title" onClose={close}>
      <h2 id="web-save-title">Save as insight</h2>
      {saved ? (
        <p role="status" class="web-saved">
          Saved as <Link href={projectPath(project, `insights/${saved.insight.short_id}`)}>{saved.insight.name || 'Untitled insight'}</Link>
          {saved.on && (
            <>
              {' '}
              on <Link href={projectPath(project, `dashboard/${saved.on.id}`)}>{named(saved.on)}</Link>
            </>
          )}
          .
        </p>
      ) : (
        <form id="web-save-form" onSubmit={submit}>
          <Field label="Name" name="name" error={state.error}>
            <input value={name} required maxLength={400} onInput={(e) => setName(e.target.value)} />
          </Field>
          <Field label="Add to dashboard" name="dashboards" error={state.error}>
            <select value={dashboard} onChange={(e) => setDashboard(e.target.value)}>
              <option value="">No dashboard: the insight alone</option>
              {dashboards.map((d) => (
                <option value={String(d.id)}>{named(d)}</option>
              ))}
            </select>
          </Field>
          <ErrorNote error={state.error} fields={['name', 'dashboards']} />
          <ErrorNote error={list.error} />
        </form>
      )}
      <div class="confirm-actions">
        {!saved && (
          <button type="submit" form="web-save-form" disabled={state.busy}>
            {state.busy ? 'Saving…' : 'Save'}
          </button>
        )}
        <button type="button" class="secondary" onClick={() => ref.current.close()}>
          {saved ? 'Close' : 'Cancel'}
        </button>
      </div>
    </dialog>
  );
}

// A dashboard's filter bar, as PostHog's: a date range (presets, or custom dates) and
// event property filters over every tile, first for this view only (kept in the URL:
// date_from, date_to, properties, sent as ?filters_override=), then saved into the
// dashboard's filters for everyone by those who may edit it; and Refresh, which has
// every tile computed afresh, with when the oldest was computed.
import { useEffect, useState } from 'preact/hooks';
import { eventOperators } from '../operators.js';
import { setQuery } from '../router.jsx';
import { relativeTime } from '../ui.jsx';

// dateRanges are the dashboard-wide ranges offered, as PostHog's date_from values;
// 'custom' shows two dates instead.
export const dateRanges = [
  ['', "Each tile's own range"],
  ['dStart', 'Today'],
  ['-7d', 'Last 7 days'],
  ['-14d', 'Last 14 days'],
  ['-30d', 'Last 30 days'],
  ['-90d', 'Last 90 days'],
  ['mStart', 'This month'],
  ['all', 'All time'],
  ['custom', 'Custom dates…'],
];

const valueless = (op) => op === 'is_set' || op === 'is_not_set';
const isDate = (v) => /^\d{4}-\d{2}-\d{2}$/.test(v || '');

// viewFilters are the filters of this view, from the URL, or null when it sets none:
// {date_from, date_to, properties} as the dashboard's filters hold them.
export function viewFilters(params) {
  const out = {};
  if (params.get('date_from')) out.date_from = params.get('date_from');
  if (params.get('date_to')) out.date_to = params.get('date_to');
  try {
    const p = JSON.parse(params.get('properties') || 'null');
    if (Array.isArray(p)) out.properties = p;
  } catch {
    // A hand-edited URL: its properties are left out.
  }
  return Object.keys(out).length ? out : null;
}

// filterLabel says what a property filter keeps, as its chip shows it.
export function filterLabel(p) {
  const op = (eventOperators.find(([v]) => v === (p.operator || 'exact')) || eventOperators[0])[1];
  const value = Array.isArray(p.value) ? p.value.join(' or ') : p.value;
  return valueless(p.operator) ? `${p.key} ${op}` : `${p.key} ${op} ${value}`;
}

// DashboardFilters is the bar. filters are the dashboard's saved ones; patch saves
// (PATCH) and says so; refresh has the tiles computed afresh; computedAt is the
// oldest tile's last_refresh, if any.
export function DashboardFilters({ filters, params, editable, patch, reload, refresh, computedAt, refreshing }) {
  const view = viewFilters(params);
  const from = view && view.date_from !== undefined ? view.date_from : filters.date_from || '';
  const to = view && view.date_to !== undefined ? view.date_to : filters.date_to || '';
  const properties = view && view.properties ? view.properties : filters.properties || [];
  const custom = isDate(from) || params.get('range') === 'custom';
  const [dates, setDates] = useState({ from: isDate(from) ? from : '', to: isDate(to) ? to : '' });
  useEffect(() => setDates({ from: isDate(from) ? from : '', to: isDate(to) ? to : '' }), [from, to]);

  // show puts a change in the URL: this view's filters, the dashboard's kept.
  const show = (changes) => setQuery({ range: null, ...changes });
  // A preset ends now: over a saved custom end, this view ends today (a date includes
  // its day), for a view's null leaves the saved end in place. Each tile's own range
  // over a saved one is a change for everyone, its editors' to make.
  const chooseRange = async (value) => {
    if (value === 'custom') return setQuery({ range: 'custom' });
    if (value === '' && (filters.date_from || filters.date_to)) {
      if (await patch({ filters: { ...filters, date_from: null, date_to: null } }, "Each tile's own range again, for everyone.")) {
        show({ date_from: null, date_to: null });
        reload();
      }
      return;
    }
    show({ date_from: value, date_to: filters.date_to ? new Date().toISOString().slice(0, 10) : null });
  };
  const setProperties = (list) => show({ properties: list.length ? JSON.stringify(list) : filters.properties && filters.properties.length ? '[]' : null });
  const save = async () => {
    const next = { ...filters, date_from: from || null, date_to: to || null, properties };
    if (await patch({ filters: next }, 'Filters saved for everyone.')) {
      setQuery({ date_from: null, date_to: null, properties: null, range: null });
      reload();
    }
  };
  return (
    <section class="dash-filters" aria-label="Dashboard filters">
      <label class="inline-field">
        <span>Date range</span>
        <select id="date-range" value={custom ? 'custom' : from} onChange={(e) => chooseRange(e.target.value)}>
          {dateRanges.map(([v, label]) => (
            <option value={v} disabled={v === '' && (filters.date_from || filters.date_to) && !editable}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {custom && (
        <form
          class="inline-field"
          onSubmit={(e) => {
            e.preventDefault();
            show({ date_from: dates.from, date_to: dates.to || null });
          }}
        >
          <label class="inline-field">
            <span>From</span>
            <input type="date" id="date-from" value={dates.from} max={dates.to || undefined} required onInput={(e) => setDates({ ...dates, from: e.target.value })} />
          </label>
          <label class="inline-field">
            <span>To</span>
            <input type="date" id="date-to" value={dates.to} min={dates.from || undefined} onInput={(e) => setDates({ ...dates, to: e.target.value })} />
          </label>
          <button type="submit" class="secondary">
            Apply dates
          </button>
        </form>
      )}
      <ul class="chips" aria-label="Property filters">
        {properties.map((p, i) => (
          <li class="chip">
            <span class="clip" title={filterLabel(p)}>
              {filterLabel(p)}
            </span>
            <button type="button" class="link" aria-label={`Remove filter ${filterLabel(p)}`} onClick={() => setProperties(properties.filter((_, j) => j !== i))}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <AddFilter id="filter" onAdd={(f) => setProperties([...properties, f])} />
      {view && (
        <>
          {editable && (
            <button type="button" class="secondary" onClick={save}>
              Save filters
            </button>
          )}
          <button type="button" class="link" onClick={() => setQuery({ date_from: null, date_to: null, properties: null, range: null })}>
            {editable ? 'Discard' : "Back to the dashboard's filters"}
          </button>
        </>
      )}
      <span class="dash-refresh">
        <button type="button" class="secondary" onClick={refresh} disabled={refreshing}>
          {refreshing ? 'Refreshing…' : 'Refresh'}
        </button>
        {computedAt && (
          <span class="muted" title={new Date(computedAt).toLocaleString()}>
            Computed {relativeTime(computedAt)}
          </span>
        )}
      </span>
    </section>
  );
}

// AddFilter is the "Add filter" button, and once pressed the form of one property
// filter that onAdd receives: an event's property, or with types also its person's.
// The fields' ids start with id.
export function AddFilter({ id, types, onAdd }) {
  const [adding, setAdding] = useState(null);
  if (!adding) {
    return (
      <button type="button" class="secondary" onClick={() => setAdding({ type: 'event', key: '', operator: 'exact', value: '' })}>
        Add filter
      </button>
    );
  }
  const add = (e) => {
    e.preventDefault();
    const f = { key: adding.key.trim(), operator: adding.operator, type: adding.type };
    if (!f.key) return;
    if (!valueless(f.operator)) f.value = adding.value;
    onAdd(f);
    setAdding(null);
  };
  return (
    <form class="inline-field dash-filter-form" onSubmit={add}>
      {types && (
        <select aria-label="Of" id={`${id}-type`} value={adding.type} onChange={(e) => setAdding({ ...adding, type: e.target.value })}>
          <option value="event">Event property</option>
          <option value="person">Person property</option>
        </select>
      )}
      <input aria-label="Property" placeholder="Property" id={`${id}-key`} value={adding.key} required maxLength={400} onInput={(e) => setAdding({ ...adding, key: e.target.value })} />
      <select aria-label="Operator" id={`${id}-operator`} value={adding.operator} onChange={(e) => setAdding({ ...adding, operator: e.target.value })}>
        {eventOperators.map(([v, label]) => (
          <option value={v}>{label}</option>
        ))}
      </select>
      {!valueless(adding.operator) && (
        <input aria-label="Value" id={`${id}-value`} value={adding.value} required onInput={(e) => setAdding({ ...adding, value: e.target.value })} />
      )}
      <button type="submit" class="secondary">
        Add
      </button>
      <button type="button" class="link" onClick={() => setAdding(null)}>
        Cancel
      </button>
    </form>
  );
}

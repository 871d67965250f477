// The insight builder's fields. Each takes the query being built (source) and set, to
// change it. Text fields change the query when committed (Enter or leaving the field),
// not on every key, so a half-typed event name runs no query.
import { api } from '../api.js';
import { eventOperators } from '../operators.js';
import { Field, useAsync } from '../ui.jsx';

// fieldError places a refusal of the query API under the field it is about. hedge
// names a field of the wrong type in attr (query__interval); a query it cannot run has
// attr query and says which part in detail, which is matched here.
export function fieldError(error, source) {
  if (!error || !error.attr || !error.attr.startsWith('query')) return error;
  const d = error.message;
  const last = error.attr.split('__').pop();
  const named = { interval: 'interval', date_from: 'date_from', date_to: 'date_to', breakdown: 'breakdown', series: 'series', properties: 'properties' };
  named.funnelWindowInterval = 'window';
  named.funnelWindowIntervalUnit = 'window_unit';
  named.funnelOrderType = 'order';
  Object.assign(named, { period: 'period', totalIntervals: 'periods', retentionType: 'retention_type', targetEntity: 'target', returningEntity: 'returning' });
  Object.assign(named, { includeEventTypes: 'include', startPoint: 'start', endPoint: 'end', stepLimit: 'steps' });
  const dateTo = source.dateRange && source.dateRange.date_to;
  let attr = named[last] || 'query';
  if (attr !== 'query') return { message: d, attr };
  if (/date_to/.test(d) || (dateTo && d.includes(JSON.stringify(dateTo)))) attr = 'date_to';
  else if (/not a date|too far in the past|date range/.test(d)) attr = 'date_from';
  else if (/^interval/.test(d)) attr = 'interval';
  else if (/formula/.test(d)) attr = 'formula';
  else if (/funnelWindowIntervalUnit/.test(d)) attr = 'window_unit';
  else if (/funnelWindowInterval/.test(d)) attr = 'window';
  else if (/funnelOrderType/.test(d)) attr = 'order';
  else if (/totalIntervals/.test(d)) attr = 'periods';
  else if (/period/.test(d) && source.kind === 'RetentionQuery') attr = 'period';
  else if (/stepLimit/.test(d)) attr = 'steps';
  else if (/includeEventTypes/.test(d)) attr = 'include';
  else if (/filter/.test(d)) attr = 'properties';
  else if (/breakdown/.test(d)) attr = 'breakdown';
  else if (/series|math|steps/.test(d)) attr = 'series';
  return { message: d, attr };
}

// GroupError is the error of a group of fields (series, filters), under its legend.
function GroupError({ error, name }) {
  if (!error || error.attr !== name) return null;
  return (
    <p class="field-error" role="alert" id={`${name}-error`}>
      {error.message}
    </p>
  );
}

const maths = [
  ['total', 'Total count'],
  ['dau', 'Unique users'],
  ['weekly_active', 'Weekly active users'],
  ['monthly_active', 'Monthly active users'],
  ['unique_session', 'Unique sessions'],
  // Of the property chosen beside it.
  ['sum', 'Sum'],
  ['avg', 'Average'],
  ['min', 'Minimum'],
  ['max', 'Maximum'],
  ['median', 'Median'],
  ['p90', '90th percentile'],
  ['p95', '95th percentile'],
  ['p99', '99th percentile'],
];

// propertyMath: the maths that aggregate a property's numbers (math_property).
const propertyMath = (math) => !['total', 'dau', 'weekly_active', 'monthly_active', 'unique_group', 'unique_session', undefined, ''].includes(math);

// SeriesFields are a trend's series (event and math), a funnel's steps (events), a
// stickiness' series (events: it counts persons, whatever the math) or a lifecycle's
// one event, each with filters of its own.
export function SeriesFields({ source, set, error, project }) {
  const funnel = source.kind === 'FunnelsQuery';
  const trends = source.kind === 'TrendsQuery';
  const single = source.kind === 'LifecycleQuery';
  const noun = funnel ? 'Step' : 'Series';
  const change = (i, patch) => set({ ...source, series: source.series.map((s, j) => (j === i ? { ...s, ...patch } : s)) });
  const remove = (i) => set({ ...source, series: source.series.filter((_, j) => j !== i) });
  const min = funnel ? 2 : 1;
  return (
    <fieldset class="series" aria-describedby={error && error.attr === 'series' ? 'series-error' : undefined}>
      <legend>{funnel ? 'Steps' : 'Series'}</legend>
      <ol>
        {source.series.map((s, i) => (
          <li class="row">
            <div class="field">
              <label for={`series-${i}-event`}>
                {noun} {i + 1} event
              </label>
              <input
                id={`series-${i}-event`}
                list="event-names"
                value={s.event ?? ''}
                placeholder="Any event"
                onChange={(e) => change(i, { event: e.target.value.trim(), name: e.target.value.trim() })}
              />
            </div>
            {trends && (
              <div class="field">
                <label for={`series-${i}-math`}>Series {i + 1} value</label>
                <select id={`series-${i}-math`} value={s.math || 'total'} onChange={(e) => change(i, { math: e.target.value })}>
                  {maths.map(([v, label]) => (
                    <option value={v}>{label}</option>
                  ))}
                </select>
              </div>
            )}
            {trends && propertyMath(s.math) && (
              <div class="field">
                <label for={`series-${i}-math-property`}>Property of series {i + 1}</label>
                <input
                  id={`series-${i}-math-property`}
                  list="property-keys"
                  value={s.math_property ?? ''}
                  placeholder="$revenue"
                  onChange={(e) => change(i, { math_property: e.target.value.trim() })}
                />
              </div>
            )}
            {source.series.length > min && (
              <button type="button" class="secondary" onClick={() => remove(i)}>
                Remove {noun.toLowerCase()} {i + 1}
              </button>
            )}
            <Filters
              source={s}
              set={(next) => change(i, { properties: next.properties })}
              project={project}
              prefix={`series-${i}-filter`}
              legend={`${noun} ${i + 1} filters`}
              empty={null}
            />
          </li>
        ))}
      </ol>
      {!single && (
        <button type="button" class="secondary" onClick={() => set({ ...source, series: [...source.series, { kind: 'EventsNode', event: '', name: '', ...(trends ? { math: 'total' } : {}) }] })}>
          Add {noun.toLowerCase()}
        </button>
      )}
      <GroupError error={error} name="series" />
    </fieldset>
  );
}

const units = ['minute', 'hour', 'day', 'week', 'month'];

// FunnelFields are the conversion window and the order of the steps.
export function FunnelFields({ source, set, error }) {
  const f = source.funnelsFilter || {};
  const change = (patch) => set({ ...source, funnelsFilter: { ...f, ...patch } });
  return (
    <>
      <div class="row">
        <Field label="Conversion window" name="window" error={error}>
          <input type="number" min="1" value={f.funnelWindowInterval ?? 14} onChange={(e) => change({ funnelWindowInterval: Number(e.target.value) })} />
        </Field>
        <Field label="Window unit" name="window_unit" error={error}>
          <select value={f.funnelWindowIntervalUnit || 'day'} onChange={(e) => change({ funnelWindowIntervalUnit: e.target.value })}>
            {units.map((u) => (
              <option value={u}>{u}s</option>
            ))}
          </select>
        </Field>
      </div>
      <Field label="Step order" name="order" error={error}>
        <select value={f.funnelOrderType || 'ordered'} onChange={(e) => change({ funnelOrderType: e.target.value })}>
          <option value="ordered">Sequential: other events may come between steps</option>
          <option value="strict">Strict: no other events between steps</option>
          <option value="unordered">Any order</option>
        </select>
      </Field>
    </>
  );
}

// IntervalField is the interval a trend, a stickiness or a lifecycle counts in.
export function IntervalField({ source, set, error }) {
  return (
    <Field label="Interval" name="interval" error={error}>
      <select value={source.interval || 'day'} onChange={(e) => set({ ...source, interval: e.target.value })}>
        <option value="hour">Hour</option>
        <option value="day">Day</option>
        <option value="week">Week</option>
        <option value="month">Month</option>
      </select>
    </Field>
  );
}

// RetentionFields are PostHog's retention settings: who is in a cohort (the target
// event, the first time or every time), what counts as coming back (the returning
// event), and the cohorts' period and number.
export function RetentionFields({ source, set, error }) {
  const f = source.retentionFilter || {};
  const change = (patch) => set({ ...source, retentionFilter: { ...f, ...patch } });
  const entity = (e) => (e ? { id: e, name: e, type: 'events' } : { id: null, name: 'All events', type: 'events' });
  return (
    <>
      <div class="row">
        <Field label="Cohort event" name="target" error={error} hint="Empty for any event">
          <input list="event-names" value={(f.targetEntity && f.targetEntity.id) || ''} placeholder="Any event" onChange={(e) => change({ targetEntity: entity(e.target.value.trim()) })} />
        </Field>
        <Field label="Returning event" name="returning" error={error} hint="Empty for any event">
          <input list="event-names" value={(f.returningEntity && f.returningEntity.id) || ''} placeholder="Any event" onChange={(e) => change({ returningEntity: entity(e.target.value.trim()) })} />
        </Field>
      </div>
      <Field label="Cohort by" name="retention_type" error={error}>
        <select value={f.retentionType || 'retention_first_time'} onChange={(e) => change({ retentionType: e.target.value })}>
          <option value="retention_first_time">First time they did it</option>
          <option value="retention_recurring">Every time they did it</option>
        </select>
      </Field>
      <div class="row">
        <Field label="Period" name="period" error={error}>
          <select value={f.period || 'Day'} onChange={(e) => change({ period: e.target.value })}>
            {['Hour', 'Day', 'Week', 'Month'].map((p) => (
              <option value={p}>{p}</option>
            ))}
          </select>
        </Field>
        <Field label="Number of periods" name="periods" error={error}>
          <input type="number" min="1" max="120" value={f.totalIntervals ?? 8} onChange={(e) => change({ totalIntervals: Number(e.target.value) })} />
        </Field>
      </div>
      <Field label="Last cohort's period includes" name="date_to" error={error} hint="Empty for now">
        <input value={(source.dateRange && source.dateRange.date_to) || ''} onChange={(e) => set({ ...source, dateRange: { ...source.dateRange, date_to: e.target.value.trim() || null } })} />
      </Field>
    </>
  );
}

// PathsFields are what a step of a path is (pages, custom events or both), where paths
// start or end, and how many steps are followed.
export function PathsFields({ source, set, error }) {
  const f = source.pathsFilter || {};
  const change = (patch) => set({ ...source, pathsFilter: { ...f, ...patch } });
  const types = f.includeEventTypes && f.includeEventTypes.length ? f.includeEventTypes : ['$pageview'];
  const toggle = (t, on) => {
    const next = on ? [...types.filter((x) => x !== t), t] : types.filter((x) => x !== t);
    change({ includeEventTypes: ['$pageview', '$screen', 'custom_event'].filter((x) => next.includes(x)) });
  };
  return (
    <>
      <fieldset class="include-types" aria-describedby={error && error.attr === 'include' ? 'include-error' : undefined}>
        <legend>Steps are</legend>
        {[
          ['$pageview', 'Page views (their URL)'],
          ['$screen', 'Screen views (their name)'],
          ['custom_event', 'Custom events (their name)'],
        ].map(([t, label]) => (
          <label class="check">
            <input type="checkbox" checked={types.includes(t)} disabled={types.length === 1 && types.includes(t)} onChange={(e) => toggle(t, e.target.checked)} /> {label}
          </label>
        ))}
        <GroupError error={error} name="include" />
      </fieldset>
      <div class="row">
        <Field label="Start point" name="start" error={error} hint="A URL or event; empty for any">
          <input list="event-names" value={f.startPoint || ''} onChange={(e) => change({ startPoint: e.target.value.trim() || undefined })} />
        </Field>
        <Field label="End point" name="end" error={error} hint="A URL or event; empty for any">
          <input list="event-names" value={f.endPoint || ''} onChange={(e) => change({ endPoint: e.target.value.trim() || undefined })} />
        </Field>
      </div>
      <Field label="Steps" name="steps" error={error} hint="The steps of a path followed, 2 to 20">
        <input type="number" min="2" max="20" value={f.stepLimit ?? 5} onChange={(e) => change({ stepLimit: Number(e.target.value) })} />
      </Field>
    </>
  );
}

// DateRangeFields take PostHog's relative dates (-7d, -24h, mStart, all) or ISO dates.
export function DateRangeFields({ source, set, error }) {
  const r = source.dateRange || {};
  const change = (patch) => set({ ...source, dateRange: { ...r, ...patch } });
  return (
    <div class="row">
      <Field label="From" name="date_from" error={error} hint="-7d, -3m, mStart, all or a date">
        <input list="date-presets" value={r.date_from || '-7d'} onChange={(e) => change({ date_from: e.target.value.trim() || '-7d' })} />
      </Field>
      <Field label="To" name="date_to" error={error} hint="Empty for now">
        <input value={r.date_to || ''} onChange={(e) => change({ date_to: e.target.value.trim() || null })} />
      </Field>
      <datalist id="date-presets">
        {['-24h', '-7d', '-14d', '-30d', '-90d', 'mStart', 'yStart', 'all'].map((v) => (
          <option value={v} />
        ))}
      </datalist>
    </div>
  );
}

// BreakdownField splits the result by an event property or a person's.
export function BreakdownField({ source, set, error }) {
  const b = source.breakdownFilter || {};
  const type = b.breakdown_type || 'event';
  return (
    <div class="row">
      <div class="field">
        <label for="field-breakdown-type">Breakdown of</label>
        <select
          id="field-breakdown-type"
          value={type}
          onChange={(e) => set({ ...source, breakdownFilter: b.breakdown ? { ...b, breakdown_type: e.target.value } : { breakdown: '', breakdown_type: e.target.value } })}
        >
          <option value="event">the event</option>
          <option value="person">the person</option>
        </select>
      </div>
      <Field label={type === 'person' ? 'Breakdown by person property' : 'Breakdown by event property'} name="breakdown" error={error} hint="Empty for no breakdown">
        <input
          list={type === 'person' ? undefined : 'property-keys'}
          value={b.breakdown || ''}
          onChange={(e) => {
            const key = e.target.value.trim();
            set({ ...source, breakdownFilter: key ? { breakdown: key, breakdown_type: type } : type === 'event' ? undefined : { breakdown: '', breakdown_type: type } });
          }}
        />
      </Field>
    </div>
  );
}

// filterTypes are what a filter reads: the event's properties, its person's, or
// whether its person is in a cohort (PostHog's property filter types).
const filterTypes = [
  ['event', 'Event property'],
  ['person', 'Person property'],
  ['cohort', 'Cohort'],
];

// useCohortList answers the project's cohorts once a filter needs them.
function useCohortList(project, needed) {
  const list = useAsync((signal) => (needed && project ? api(`/api/projects/${project}/cohorts/?limit=1000`, { signal }) : Promise.resolve(null)), [project, needed]);
  return (list.data && list.data.results) || [];
}

// Filters are property filters: of every series (source is the query), or of one
// series (source is the series, prefix names its fields apart). Each is on an event
// property, a person property, or the person's being in a cohort.
export function Filters({ source, set, error, project, prefix = 'filter', legend = 'Filters', empty = 'No filters: every event of the series counts.' }) {
  const list = source.properties || [];
  const change = (i, patch) => set({ ...source, properties: list.map((p, j) => (j === i ? { ...p, ...patch } : p)) });
  const cohorts = useCohortList(project, list.some((p) => p.type === 'cohort'));
  const retype = (i, type) =>
    change(i, type === 'cohort' ? { type, key: 'id', operator: 'in', value: '' } : { type, key: '', operator: 'exact', value: '' });
  const top = prefix === 'filter';
  return (
    <fieldset class={top ? 'filters' : 'filters series-filters'} aria-describedby={top && error && error.attr === 'properties' ? 'properties-error' : undefined}>
      <legend>{legend}</legend>
      {list.length === 0 && empty && <p class="hint">{empty}</p>}
      <ol>
        {list.map((p, i) => {
          const id = `${prefix}-${i}`;
          const n = top ? `Filter ${i + 1}` : `${legend.replace(/ filters$/, '')} filter ${i + 1}`;
          return (
            <li class="row">
              <div class="field">
                <label for={`${id}-type`}>{n} of</label>
                <select id={`${id}-type`} value={p.type || 'event'} onChange={(e) => retype(i, e.target.value)}>
                  {filterTypes.map(([v, label]) => (
                    <option value={v}>{label}</option>
                  ))}
                </select>
              </div>
              {p.type === 'cohort' ? (
                <>
                  <div class="field">
                    <label for={`${id}-op`}>{n} operator</label>
                    <select id={`${id}-op`} value={p.operator || 'in'} onChange={(e) => change(i, { operator: e.target.value })}>
                      <option value="in">in</option>
                      <option value="not_in">not in</option>
                    </select>
                  </div>
                  <div class="field">
                    <label for={`${id}-value`}>{n} cohort</label>
                    <select id={`${id}-value`} value={String(p.value ?? '')} onChange={(e) => change(i, { value: e.target.value === '' ? '' : Number(e.target.value) })}>
                      <option value="">{cohorts.length ? 'Choose a cohort' : 'No cohorts yet'}</option>
                      {cohorts.map((c) => (
                        <option value={String(c.id)}>{c.name || `Cohort ${c.id}`}</option>
                      ))}
                    </select>
                  </div>
                </>
              ) : (
                <>
                  <div class="field">
                    <label for={`${id}-key`}>{n} property</label>
                    <input id={`${id}-key`} list={p.type === 'person' ? undefined : 'property-keys'} value={p.key} onChange={(e) => change(i, { key: e.target.value.trim() })} />
                  </div>
                  <div class="field">
                    <label for={`${id}-op`}>{n} operator</label>
                    <select id={`${id}-op`} value={p.operator || 'exact'} onChange={(e) => change(i, { operator: e.target.value })}>
                      {eventOperators.map(([v, label]) => (
                        <option value={v}>{label}</option>
                      ))}
                    </select>
                  </div>
                  {p.operator !== 'is_set' && p.operator !== 'is_not_set' && (
                    <div class="field">
                      <label for={`${id}-value`}>{n} value</label>
                      <input id={`${id}-value`} value={p.value ?? ''} onChange={(e) => change(i, { value: e.target.value })} />
                    </div>
                  )}
                </>
              )}
              <button type="button" class="secondary" onClick={() => set({ ...source, properties: list.filter((_, j) => j !== i) })}>
                Remove {n.toLowerCase()}
              </button>
            </li>
          );
        })}
      </ol>
      <button type="button" class="secondary" onClick={() => set({ ...source, properties: [...list, { key: '', operator: 'exact', value: '', type: 'event' }] })}>
        {top ? 'Add filter' : `Add a filter to ${legend.replace(/ filters$/, '').toLowerCase()}`}
      </button>
      {top && <GroupError error={error} name="properties" />}
    </fieldset>
  );
}

// cleanFilters are the filters of list that are filled in, as hedge takes them: a
// comparison's value a number, a cohort's its id.
export function cleanFilters(list) {
  return (list || [])
    .filter((p) => (p.type === 'cohort' ? p.value !== '' && p.value !== undefined : p.key && (p.operator === 'is_set' || p.operator === 'is_not_set' || p.value !== '')))
    .map((p) => (/^(gt|gte|lt|lte)$/.test(p.operator) && p.value !== '' && !isNaN(p.value) ? { ...p, value: Number(p.value) } : p));
}

// Web analytics, as PostHog's: the overview tiles (visitors, views, sessions, session
// duration, bounce rate, each with its change from the period before) and the tables
// of top pages, entry pages, referrers, devices, browsers, systems and countries for a
// date range. hedge computes every figure (WebOverviewQuery, WebStatsTableQuery); the
// screen only shows them. The range is in the URL (?date_from=), so it can be shared.
import { query } from '../api.js';
import { setQuery } from '../router.jsx';
import { ErrorNote, Loading, Page, useAsync } from '../ui.jsx';

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

// webTables are the tables, each a WebStatsTableQuery's breakdownBy: [breakdownBy,
// heading, column heading, with the bounce rate].
const webTables = [
  ['Page', 'Top pages', 'Page', true],
  ['InitialPage', 'Entry pages', 'Entry page', true],
  ['InitialReferringDomain', 'Referrers', 'Referring domain', false],
  ['DeviceType', 'Devices', 'Device type', false],
  ['Browser', 'Browsers', 'Browser', false],
  ['OS', 'Operating systems', 'Operating system', false],
  ['Country', 'Countries', 'Country', false],
];

// The rows a table shows.
const tableRows = 10;

export function WebAnalytics({ project, params }) {
  const chosen = params.get('date_from');
  const range = webRanges.some(([v]) => v === chosen) ? chosen : defaultRange;
  const dateRange = { date_from: range, date_to: null };
  return (
    <Page
      title="Web analytics"
      actions={
        <label class="inline-field">
          <span>Date range</span>
          <select id="web-range" value={range} onChange={(e) => setQuery({ date_from: e.target.value === defaultRange ? null : e.target.value })}>
            {webRanges.map(([v, label]) => (
              <option value={v}>{label}</option>
            ))}
          </select>
        </label>
      }
    >
      <p class="muted web-note">
        Sessions are the events of one <code>$session_id</code>; a view is a <code>$pageview</code> or <code>$screen</code>. A session bounces
        when it has one view, no autocaptured click and lasts under 10 seconds.
      </p>
      <Overview project={project} dateRange={dateRange} />
      <div class="web-tables">
        {webTables.map(([by, title, column, bounce]) => (
          <WebTable key={by + range} project={project} dateRange={dateRange} by={by} title={title} column={column} bounce={bounce} />
        ))}
      </div>
    </Page>
  );
}

// Overview is the tiles of WebOverviewQuery, compared with the period before.
function Overview({ project, dateRange }) {
  const overview = useAsync(
    (signal) => query(project, { kind: 'WebOverviewQuery', dateRange, properties: [], compareFilter: { compare: true } }, signal),
    [project, dateRange.date_from],
  );
  if (overview.error) return <ErrorNote error={overview.error} />;
  if (!overview.data) return <Loading label="Loading the overview…" />;
  return (
    <ul class="web-tiles" aria-label="Overview">
      {overview.data.results.map((item) => (
        <Tile item={item} />
      ))}
    </ul>
  );
}

const tileLabels = { visitors: 'Visitors', views: 'Views', sessions: 'Sessions', 'session duration': 'Session duration', 'bounce rate': 'Bounce rate' };

// Tile is one item of the overview: its value, and its change from the period before,
// green when it is good news (a rise, or a fall of what isIncreaseBad).
function Tile({ item }) {
  const key = item.key.replace(' ', '-');
  const change = item.changeFromPreviousPct;
  let note = <span class="muted">no data before</span>;
  if (change !== null && change !== undefined) {
    const good = change === 0 ? null : change > 0 !== Boolean(item.isIncreaseBad);
    const arrow = change > 0 ? '▲' : change < 0 ? '▼' : '';
    note = (
      <span class={good === null ? 'muted' : good ? 'web-good' : 'web-bad'}>
        <span aria-hidden="true">{arrow} </span>
        {change > 0 ? 'up' : change < 0 ? 'down' : 'unchanged'} {change !== 0 && `${Math.abs(change).toLocaleString('en-US')}%`}
      </span>
    );
  } else if (item.previous !== null && item.previous !== undefined) {
    note = <span class="muted">{formatValue(item.kind, item.previous)} before</span>;
  }
  return (
    <li class="card web-tile" data-key={key}>
      <span class="web-tile-label">{tileLabels[item.key] || item.key}</span>
      <strong class="web-tile-value">{formatValue(item.kind, item.value)}</strong>
      <span class="web-tile-change">{note}</span>
    </li>
  );
}

// formatValue shows an overview value of its kind: a count, seconds, a percentage.
export function formatValue(kind, value) {
  if (value === null || value === undefined) return '–';
  if (kind === 'duration_s') return duration(value);
  if (kind === 'percentage') return `${Math.round(value)}%`;
  return Math.round(value).toLocaleString('en-US');
}

// duration is seconds as "1h 2m", "3m 5s" or "17s".
export function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

const regions = typeof Intl.DisplayNames === 'function' ? new Intl.DisplayNames(['en'], { type: 'region' }) : null;

// label is a breakdown value as the table shows it.
function label(by, value) {
  if (value === null || value === undefined || value === '') return <span class="muted">(none)</span>;
  if (by === 'InitialReferringDomain' && value === '$direct') return 'Direct';
  if (by === 'Country' && regions && /^[A-Z]{2}$/.test(value)) {
    let name = value;
    try {
      name = regions.of(value);
    } catch {
      // not a region Intl knows: the code alone
    }
    return (
      <>
        {name} <span class="muted">{value}</span>
      </>
    );
  }
  return String(value);
}

// WebTable is one WebStatsTableQuery: the range's top values with their visitors and
// views (and bounce rate), each row's bar its share of the visitors.
function WebTable({ project, dateRange, by, title, column, bounce }) {
  const table = useAsync(
    (signal) =>
      query(project, { kind: 'WebStatsTableQuery', breakdownBy: by, dateRange, properties: [], includeBounceRate: bounce, limit: tableRows }, signal),
    [project, dateRange.date_from, by],
  );
  const id = `web-${by}`;
  let body;
  if (table.error) body = <ErrorNote error={table.error} />;
  else if (!table.data) body = <Loading label={`Loading ${title.toLowerCase()}…`} />;
  else if (table.data.results.length === 0) body = <p class="empty">No views in this range.</p>;
  else {
    const rows = table.data.results;
    const total = rows.reduce((sum, r) => sum + (r[1][0] || 0), 0);
    body = (
      <div class="table-wrap">
        <table aria-labelledby={id}>
          <thead>
            <tr>
              <th scope="col">{column}</th>
              <th scope="col" class="num">
                Visitors
              </th>
              <th scope="col" class="num">
                Views
              </th>
              {bounce && (
                <th scope="col" class="num">
                  Bounce rate
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <th scope="row" class="web-value">
                  <span class="web-bar" style={{ width: `${total ? (100 * (r[1][0] || 0)) / total : 0}%` }} />
                  <span class="web-label">{label(by, r[0])}</span>
                </th>
                <td class="num">{(r[1][0] || 0).toLocaleString('en-US')}</td>
                <td class="num">{(r[2][0] || 0).toLocaleString('en-US')}</td>
                {bounce && <td class="num">{r[3][0] === null ? '–' : `${Math.round(100 * r[3][0])}%`}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    );
  }
  return (
    <section class="card web-table" data-breakdown={by}>
      <h2 id={id}>{title}</h2>
      {body}
      {table.data && table.data.hasMore && <p class="muted web-more">The top {tableRows} of more.</p>}
    </section>
  );
}

// The answers of web analytics drawn: a WebOverviewQuery's tiles and a
// WebStatsTableQuery's table, for the Web analytics screen and for the insights and
// dashboard tiles saved from it (insight-result.jsx), so a card reads the same in both.

// webBreakdowns are the tables, by WebStatsTableQuery breakdownBy: their heading (and
// their tab's, in a card of several), the heading of their value column, whether they show the bounce rate, and the event
// property a click on a row filters by. Entry and exit pages filter by the views of
// the page ($pathname) too: hedge's filters select views (warehouse/query_web.go), and
// it keeps no session properties to filter by the session's entry or exit.
export const webBreakdowns = {
  Page: { title: 'Pages', tab: 'Pages', column: 'Page', bounce: true, key: '$pathname' },
  InitialPage: { title: 'Entry pages', tab: 'Entry pages', column: 'Entry page', bounce: true, key: '$pathname' },
  ExitPage: { title: 'Exit pages', tab: 'Exit pages', column: 'Exit page', bounce: false, key: '$pathname' },
  InitialReferringDomain: { title: 'Referrers', tab: 'Referrers', column: 'Referring domain', bounce: false, key: '$referring_domain' },
  InitialUTMSource: { title: 'UTM sources', tab: 'Source', column: 'UTM source', bounce: false, key: 'utm_source' },
  InitialUTMMedium: { title: 'UTM media', tab: 'Medium', column: 'UTM medium', bounce: false, key: 'utm_medium' },
  InitialUTMCampaign: { title: 'UTM campaigns', tab: 'Campaign', column: 'UTM campaign', bounce: false, key: 'utm_campaign' },
  DeviceType: { title: 'Device types', tab: 'Device type', column: 'Device type', bounce: false, key: '$device_type' },
  Browser: { title: 'Browsers', tab: 'Browser', column: 'Browser', bounce: false, key: '$browser' },
  OS: { title: 'Operating systems', tab: 'OS', column: 'Operating system', bounce: false, key: '$os' },
  Country: { title: 'Countries', column: 'Country', bounce: false, key: '$geoip_country_code' },
};

const tileLabels = { visitors: 'Visitors', views: 'Views', sessions: 'Sessions', 'session duration': 'Session duration', 'bounce rate': 'Bounce rate' };

// WebOverviewTiles draws a WebOverviewQuery's items, each with its change from the
// period before when compared (some item has a previous: a count's is 0 at least).
export function WebOverviewTiles({ items }) {
  if (!Array.isArray(items)) return <p class="empty">No result yet.</p>;
  const compared = items.some((item) => item.previous !== null && item.previous !== undefined);
  return (
    <ul class="web-tiles" aria-label="Overview">
      {items.map((item) => (
        <Tile item={item} compared={compared} />
      ))}
    </ul>
  );
}

// Tile is one item of the overview: its value, and its change from the period before,
// green when it is good news (a rise, or a fall of what isIncreaseBad).
function Tile({ item, compared }) {
  const key = item.key.replace(' ', '-');
  const change = item.changeFromPreviousPct;
  // Without a comparison, every previous is null: nothing to say.
  let note = compared ? <span class="muted">no data before</span> : null;
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

// labelText is a breakdown value as words, for a filter's chip and a button's name.
export function labelText(by, value) {
  if (by === 'InitialReferringDomain' && value === '$direct') return 'Direct';
  return String(value);
}

// WebStatsTable draws a WebStatsTableQuery's rows: the value, its visitors and views
// (and bounce rate when the answer has it), each row's bar its share of the visitors.
// With onPick, a row's value is a button that calls it with the value (the screen adds
// it as a filter); a row without a value has none.
export function WebStatsTable({ by, result, labelledBy, onPick }) {
  if (!result || !Array.isArray(result.results)) return <p class="empty">No result yet.</p>;
  const rows = result.results;
  if (rows.length === 0) return <p class="empty">No views in this range.</p>;
  const meta = webBreakdowns[by] || { column: by };
  const bounce = Array.isArray(result.columns) && result.columns.includes('context.columns.bounce_rate');
  const total = rows.reduce((sum, r) => sum + (r[1][0] || 0), 0);
  return (
    <div class="table-wrap">
      <table aria-labelledby={labelledBy} aria-label={labelledBy ? undefined : meta.title}>
        <thead>
          <tr>
            <th scope="col">{meta.column}</th>
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
          {rows.map((r) => {
            const known = r[0] !== null && r[0] !== undefined && r[0] !== '';
            return (
              <tr>
                <th scope="row" class="web-value">
                  <span class="web-bar" style={{ width: `${total ? (100 * (r[1][0] || 0)) / total : 0}%` }} />
                  {onPick && known ? (
                    <button type="button" class="link web-label web-pick" title={`Filter by ${meta.column.toLowerCase()} ${labelText(by, r[0])}`} onClick={() => onPick(r[0])}>
                      {label(by, r[0])}
                    </button>
                  ) : (
                    <span class="web-label">{label(by, r[0])}</span>
                  )}
                </th>
                <td class="num">{(r[1][0] || 0).toLocaleString('en-US')}</td>
                <td class="num">{(r[2][0] || 0).toLocaleString('en-US')}</td>
                {bounce && <td class="num">{r[3][0] === null ? '–' : `${Math.round(100 * r[3][0])}%`}</td>}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

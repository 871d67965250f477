// Time series charts drawn as SVG, made accessible: an aria-label that states what the
// chart shows, legend entries that are buttons, and a table of the same numbers.
//
// Decision: hedge draws its own SVG instead of using uPlot. uPlot alone is 24 KB
// gzipped, a third of the whole console's today and more than half the 40 KB budget of
// the charts' screens' first load; the charts here
// are a few dozen points per series, which SVG draws at no cost. SVG also takes its
// colours from the theme's CSS variables through classes, so a theme change restyles
// it without a redraw (a canvas keeps the colours it was drawn with).
import { useEffect, useRef, useState } from 'preact/hooks';
import { downloadCSV, format } from './ui.jsx';

// niceTicks divides [min, max] (min 0 or below) into about n steps of 1, 2 or 5 times
// a power of ten, from a tick at or under min to one at or over max, through 0; whole
// numbers (counts of persons) are divided in steps of 1 at least.
export function niceTicks(max, n = 4, min = 0, whole = false) {
  if (!(max > 0) && !(min < 0)) return [0, 1];
  const raw = Math.max((Math.max(0, max) - min) / n, whole ? 1 : 0);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let v = Math.floor(min / step) * step; v < max + step; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks.length < 2) ticks.push(ticks[0] + step);
  return ticks;
}

// shortDate labels an x position: a day as "Nov 25", an hour as "14:00".
function shortDate(label) {
  if (label.length <= 10) {
    const d = new Date(label + 'T00:00:00');
    return d.toLocaleDateString('en-US', { month: 'short', day: 'numeric' });
  }
  const t = label.slice(11, 16);
  return t === '00:00' ? shortDate(label.slice(0, 10)) : t;
}

// longDate writes an interval's start as PostHog's tooltip does: a day as
// "26-Nov-2026", an hour as "26-Nov-2026 14:00".
export function longDate(label) {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}:\d{2}))?/.exec(label || '');
  if (!m) return label || '';
  const day = `${m[3]}-${months[Number(m[2]) - 1]}-${m[1]}`;
  return m[4] && label.length > 10 ? `${day} ${m[4]}` : day;
}

// wallClock is the time t on the clocks of timeZone, as "YYYY-MM-DD HH:MM:SS"; an
// unknown zone reads UTC.
function wallClock(t, timeZone) {
  let parts;
  try {
    parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }).formatToParts(t);
  } catch {
    return t.toISOString().slice(0, 19).replace('T', ' ');
  }
  const p = Object.fromEntries(parts.map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
}

// full writes a bucket's start (a date, or a date and time) as a date and time.
const full = (day) => (day.length <= 10 ? `${day} 00:00:00` : day);

// after is the start of the interval after the one that starts at day (wall-clock).
function after(day, interval) {
  const t = new Date(full(day).replace(' ', 'T') + 'Z');
  if (interval === 'hour') t.setUTCHours(t.getUTCHours() + 1);
  else if (interval === 'week') t.setUTCDate(t.getUTCDate() + 7);
  else if (interval === 'month') t.setUTCMonth(t.getUTCMonth() + 1);
  else t.setUTCDate(t.getUTCDate() + 1);
  return t.toISOString().slice(0, 19).replace('T', ' ');
}

// inProgressFrom is the index of the first of a trend's buckets (their starts, on the
// clocks of timeZone) that has not ended at now: the current interval, whose count is
// still growing, and any after it. days.length when all have ended.
export function inProgressFrom(days, interval, timeZone, now = new Date()) {
  const wall = wallClock(now, timeZone);
  const i = days.findIndex((d, j) => (j + 1 < days.length ? full(days[j + 1]) : after(d, interval)) > wall);
  return i < 0 ? days.length : i;
}

// noteRoom is the height of the note under a chart that has an interval in progress
// (.chart-note: a line of 0.85rem at line-height 1.45, 0.25rem above it).
const noteRoom = 24;

// TimeChart draws series [{label, data}] over labels (ISO dates or date-times) as
// lines, bars or stacked bars (a negative value stacked below the axis, as a
// lifecycle's dormant persons). Labels of another kind (a stickiness' "3 days") come
// with axis, which names them (name), writes them under the axis (tick) and in the
// tooltip (long), and may give values a unit and leave out totals (noTotal). The
// buckets from current on (inProgressFrom) are drawn dashed, for they are not over, and a note under the plot says so. height is
// the plot's and the note's together, so that a chart fits a dashboard tile with or
// without the note. title names it for assistive technology. drill(i, j, element),
// when given, is what clicking (or Enter on) the point of series i at interval j does,
// for the series marked drillable: the point is then a button.
export function TimeChart({ title, labels, series, display = 'line', height = 280, current = labels.length, drill, axis = dateAxis }) {
  const box = useRef();
  const [width, setWidth] = useState(600);
  const [hidden, setHidden] = useState(() => new Set());
  const [asTable, setAsTable] = useState(false);
  useEffect(() => {
    // The element, not the ref: the ref is null once the chart gives way to its table.
    const el = box.current;
    if (!el) return;
    setWidth(el.clientWidth || 600);
    const resize = new ResizeObserver(() => el.clientWidth && setWidth(el.clientWidth));
    resize.observe(el);
    return () => resize.disconnect();
  }, [asTable]);
  const totals = series.map((s) => s.data.reduce((a, b) => a + (b ?? 0), 0));
  const peak = Math.max(0, ...series.flatMap((s) => s.data.map((v) => v ?? 0)));
  const unit = axis.unit || '';
  const summary =
    `${title}: ${series.length} series from ${labels[0] ?? '—'} to ${labels[labels.length - 1] ?? '—'}; ` +
    series.map((s, i) => `${s.label} total ${format(totals[i])}`).join(', ') +
    `; peak ${format(peak)}${unit}` +
    (current < labels.length ? `; from ${labels[current]} the interval is still in progress.` : '.');
  const toggle = (i) =>
    setHidden((h) => {
      const n = new Set(h);
      n.has(i) ? n.delete(i) : n.add(i);
      return n;
    });
  return (
    <figure class="chart">
      <div class="chart-tools">
        <ul class="legend" aria-label="Series">
          {series.map((s, i) => (
            <li>
              <button type="button" class="legend-item" aria-pressed={!hidden.has(i)} title={`${s.label}: ${format(totals[i])}`} onClick={() => toggle(i)}>
                <span class="swatch" style={{ background: `var(--series-${i % 8})` }} aria-hidden="true" />
                <span class="legend-label">{s.label}</span> {!axis.noTotal && <span class="muted">{format(totals[i])}</span>}
              </button>
            </li>
          ))}
        </ul>
        <div class="chart-buttons">
          <button type="button" class="secondary" aria-pressed={asTable} onClick={() => setAsTable(!asTable)}>
            {asTable ? 'Show chart' : 'Show table'}
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() => downloadCSV(`${title || 'chart'}.csv`, [axis.name.toLowerCase(), ...series.map((s) => s.label)], labels.map((l, j) => [l, ...series.map((s) => s.data[j])]))}
          >
            CSV
          </button>
        </div>
      </div>
      {asTable ? (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">{title}</caption>
            <thead>
              <tr>
                <th scope="col">{axis.name}</th>
                {series.map((s) => (
                  <th scope="col" class="num">
                    <span class="clip" title={s.label}>
                      {s.label}
                    </span>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {labels.map((l, j) => (
                <tr>
                  <th scope="row">{l}</th>
                  {series.map((s) => (
                    <td class="num">{format(s.data[j])}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <div ref={box} class="chart-canvas">
          <Plot {...{ labels, series, display, hidden, width, summary, current, drill, axis }} height={current < labels.length ? height - noteRoom : height} />
        </div>
      )}
      {!asTable && current < labels.length && <p class="muted chart-note">Dashed: the current interval, still in progress.</p>}
      <figcaption class="sr-only">{summary}</figcaption>
    </figure>
  );
}

// dateAxis is a time series' x axis: intervals' starts.
const dateAxis = { name: 'Date', tick: shortDate, long: longDate };

// BarList shows values by label as horizontal bars in plain HTML (top N breakdowns).
export function BarList({ title, items }) {
  const max = Math.max(1, ...items.map((i) => i.value));
  return (
    <ol class="bar-list" aria-label={title}>
      {items.map((i) => (
        <li>
          <span class="bar" style={{ width: `${(100 * i.value) / max}%` }} aria-hidden="true" />
          <span class="bar-label" title={i.label}>
            {i.label}
          </span>
          <span class="bar-value">{format(i.value)}</span>
        </li>
      ))}
    </ol>
  );
}

// Plot is the SVG of the shown series: the y axis from zero with its grid, dates
// under the x axis (as many as fit), and lines with points, bars side by side, or
// bars stacked in series order. Hovering an interval (or focusing one of its points)
// shows a tooltip of every shown series' value there; a drillable series' points and
// bars are buttons (drill).
// The buckets from current on are in progress: a line reaches them by a dashed path
// of its own (class in-progress), their points are hollow and their bars pale and
// outlined dashed, so that a day not over does not read as a drop.
function Plot({ labels, series, display, hidden, width, height, summary, current, drill, axis }) {
  const [tip, setTip] = useState(null);
  // cursor is the point a Tab reaches ({i, j}): a chart is one stop, whose arrow keys
  // move between its points (Left and Right by interval, Up and Down by series).
  const [cursor, setCursor] = useState(null);
  // pressed is the point an Enter or Space went down on: only its release opens it (not
  // the release of the Enter that pressed the dialog's Close, focus back on the point).
  const pressed = useRef(null);
  const shown = series.map((s, i) => ({ ...s, i })).filter((s) => !hidden.has(s.i));
  const n = labels.length;
  const left = 48, right = 12, top = 10, bottom = 26;
  const plotW = Math.max(10, width - left - right), plotH = Math.max(10, height - top - bottom);
  const stacked = display === 'stacked';
  const bars = display === 'bar' || stacked;
  const value = (s, j) => s.data[j] ?? 0;
  // Stacked, the positive values pile up from 0 and the negative ones down from it.
  const sumOf = (j, sign) => shown.reduce((a, s) => a + (Math.sign(value(s, j)) === sign ? value(s, j) : 0), 0);
  const max = Math.max(0, ...labels.map((_, j) => (stacked ? sumOf(j, 1) : Math.max(0, ...shown.map((s) => value(s, j))))));
  const min = Math.min(0, ...labels.map((_, j) => (stacked ? sumOf(j, -1) : Math.min(0, ...shown.map((s) => value(s, j))))));
  const ticks = niceTicks(max, 4, min, shown.every((s) => s.data.every((v) => Number.isInteger(v ?? 0))));
  const top_ = ticks[ticks.length - 1] || 1;
  const bottom_ = ticks[0];
  const y = (v) => top + plotH - ((v - bottom_) / (top_ - bottom_)) * plotH;
  const slot = plotW / Math.max(n, 1);
  const x = (j) => left + (bars ? slot * (j + 0.5) : n > 1 ? (plotW * j) / (n - 1) : plotW / 2);
  const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(plotW / 70))));
  const marks = [];
  // mark is what a point or bar of series s at interval j answers to: hover and focus
  // show the tooltip; a drillable one is a button that drills into it.
  const stops = drill ? shown.filter((s) => s.drillable).map((s) => s.i) : [];
  const stop = cursor && stops.includes(cursor.i) && cursor.j < n ? cursor : stops.length ? { i: stops[0], j: 0 } : null;
  // move answers the arrow key of e on point (i, j): focus goes to the next point.
  const move = (e, i, j) => {
    let k = j;
    const at = stops.indexOf(i);
    if (e.key === 'ArrowRight') k = Math.min(n - 1, j + 1);
    else if (e.key === 'ArrowLeft') k = Math.max(0, j - 1);
    else if (e.key === 'Home') k = 0;
    else if (e.key === 'End') k = n - 1;
    else if (e.key === 'ArrowUp' || e.key === 'ArrowDown') i = stops[(at + (e.key === 'ArrowUp' ? stops.length - 1 : 1)) % stops.length];
    else return;
    e.preventDefault();
    const el = e.currentTarget.ownerSVGElement.querySelector(`[data-series="${i}"][data-j="${k}"]`);
    if (el) {
      setCursor({ i, j: k });
      el.focus();
    }
  };
  const mark = (s, j) => {
    const props = { 'data-series': s.i, 'data-j': j, onMouseEnter: () => setTip(j) };
    if (!drill || !s.drillable) return { ...props, 'aria-hidden': 'true' };
    const open = (e) => drill(s.i, j, e.currentTarget);
    return {
      ...props,
      tabindex: stop && stop.i === s.i && stop.j === j ? 0 : -1,
      role: 'button',
      'aria-label': `${s.label} on ${axis.long(labels[j])}: ${format(value(s, j))}${!s.settled && j >= current ? ' (in progress)' : ''}, show persons`,
      onFocus: () => {
        setTip(j);
        setCursor({ i: s.i, j });
      },
      onBlur: () => setTip(null),
      onClick: open,
      // Enter and Space open on their release, as a button's Space does, so that the
      // key's own events land before the dialog takes focus.
      onKeyDown: (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          pressed.current = `${s.i}-${j}`;
        } else move(e, s.i, j);
      },
      onKeyUp: (e) => {
        if ((e.key === 'Enter' || e.key === ' ') && pressed.current === `${s.i}-${j}`) {
          e.preventDefault();
          pressed.current = null;
          open(e);
        }
      },
    };
  };
  // A column's click (on a line chart) drills into the drillable line nearest the pointer.
  const columnClick = (j) => (e) => {
    if (bars || !drill) return;
    const svg = e.currentTarget.ownerSVGElement;
    const py = e.clientY - svg.getBoundingClientRect().top;
    const near = shown.filter((s) => s.drillable).sort((a, b) => Math.abs(y(value(a, j)) - py) - Math.abs(y(value(b, j)) - py))[0];
    if (near) drill(near.i, j, svg.querySelector(`[data-series="${near.i}"][data-j="${j}"]`));
  };
  const hits = labels.map((_, j) => {
    const w = bars ? slot : n > 1 ? plotW / (n - 1) : plotW;
    const x0 = Math.max(left, x(j) - w / 2);
    return <rect class="hit" aria-hidden="true" x={x0} y={top} width={Math.max(1, Math.min(left + plotW, x(j) + w / 2) - x0)} height={plotH} onMouseEnter={() => setTip(j)} onClick={columnClick(j)} />;
  });
  if (bars) {
    const bandW = Math.max(1, slot * 0.7);
    labels.forEach((_, j) => {
      const bases = { 1: 0, '-1': 0 };
      shown.forEach((s, k) => {
        const v = value(s, j);
        const w = stacked ? bandW : bandW / shown.length;
        const x0 = x(j) - bandW / 2 + (stacked ? 0 : k * w);
        const sign = v < 0 ? -1 : 1;
        const base = stacked ? bases[sign] : 0;
        const y0 = y(Math.max(base, base + v));
        const open = !s.settled && j >= current;
        marks.push(
          <rect class={`series-${s.i % 8} bar${open ? ' in-progress' : ''}`} x={x0} y={y0} width={Math.max(1, w - (stacked ? 0 : 1))} height={Math.abs(y(base + v) - y(base))} {...mark(s, j)} />,
        );
        bases[sign] = base + v;
      });
    });
  } else {
    // path draws the line through the buckets [from, to).
    const path = (s, from, to) =>
      labels
        .slice(from, to)
        .map((_, k) => `${k ? 'L' : 'M'}${x(from + k).toFixed(1)},${y(value(s, from + k)).toFixed(1)}`)
        .join('');
    shown.forEach((s) => {
      // A settled series (a previous period's) has no interval in progress.
      const from = s.settled ? n : current;
      if (from > 1) marks.push(<path class={`series-${s.i % 8} line`} aria-hidden="true" d={path(s, 0, from)} />);
      if (from < n) marks.push(<path class={`series-${s.i % 8} line in-progress`} aria-hidden="true" d={path(s, Math.max(0, from - 1), n)} />);
      if (n <= 60)
        labels.forEach((_, j) =>
          marks.push(
            <circle class={`series-${s.i % 8} point${j >= from ? ' in-progress' : ''}`} cx={x(j)} cy={y(value(s, j))} r="3" {...mark(s, j)} />,
          ),
        );
    });
  }
  // With points to press the plot is a group of buttons (an img's children are not
  // reachable); its drawing is hidden from assistive technology either way.
  const drillable = drill && shown.some((s) => s.drillable);
  const tipX = tip !== null && tip < n ? x(tip) : null;
  return (
    <>
    <svg class="plot" width={width} height={height} role={drillable ? 'group' : 'img'} aria-label={summary} onMouseLeave={() => setTip(null)}>
      {ticks.map((t) => (
        <g class="tick" aria-hidden="true">
          <line x1={left} x2={left + plotW} y1={y(t)} y2={y(t)} />
          <text x={left - 6} y={y(t)} dy="0.32em" text-anchor="end">
            {format(t)}
            {axis.unit}
          </text>
        </g>
      ))}
      {labels.map((label, j) =>
        j % every === 0 ? (
          <text class="x-label" aria-hidden="true" x={x(j)} y={height - 8} text-anchor={x(j) > width - right - 24 ? 'end' : j === 0 && !bars ? 'start' : 'middle'}>
            {axis.tick(label)}
          </text>
        ) : null,
      )}
      {tipX !== null && <line class="guide" aria-hidden="true" x1={tipX} x2={tipX} y1={top} y2={top + plotH} />}
      {hits}
      {marks}
    </svg>
    {tipX !== null && (
      <div class="chart-tip" aria-hidden="true" style={tipX > width / 2 ? { right: `${width - tipX + 12}px` } : { left: `${tipX + 12}px` }}>
        <div class="chart-tip-head">
          {axis.long(labels[tip])}
          {tip >= current ? ' (in progress)' : ''}
        </div>
        {shown.map((s) => (
          <div class="chart-tip-row">
            <span class="swatch" style={{ background: `var(--series-${s.i % 8})` }} />
            <span class="chart-tip-label">{s.label}</span>
            <span class="chart-tip-value">
              {format(value(s, tip))}
              {axis.unit}
            </span>
          </div>
        ))}
      </div>
    )}
    </>
  );
}

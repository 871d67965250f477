// Time series charts on uPlot (canvas), made accessible: an aria-label that states
// what the chart shows, legend entries that are buttons, and a table of the same
// numbers. Colours are read from the theme's CSS variables at draw time, and the chart
// is drawn again when the theme changes (a canvas keeps the colours it was drawn with).
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { cssVar, onThemeChange } from './theme.js';
import { downloadCSV, format } from './ui.jsx';

// seriesColor is the n-th series colour of the palette in the theme.
export function seriesColor(n) {
  return cssVar(`--series-${n % 8}`);
}

// TimeChart draws series [{label, data}] over labels (ISO dates or date-times) as
// lines, bars or stacked bars. title names it for assistive technology.
export function TimeChart({ title, labels, series, display = 'line', height = 280 }) {
  const box = useRef();
  const [hidden, setHidden] = useState(() => new Set());
  const [asTable, setAsTable] = useState(false);
  const [tick, setTick] = useState(0);
  useEffect(() => onThemeChange(() => setTick((n) => n + 1)), []);
  useEffect(() => {
    if (asTable || !box.current) return;
    const xs = labels.map((l) => new Date(l.length <= 10 ? l + 'T00:00:00' : l).getTime() / 1000);
    const shown = series.map((s, i) => ({ ...s, i })).filter((s) => !hidden.has(s.i));
    let data = shown.map((s) => s.data.map((v) => v ?? 0));
    if (display === 'stacked') {
      const acc = xs.map(() => 0);
      data = data.map((d) => d.map((v, j) => (acc[j] += v)));
    }
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') }, ticks: { stroke: cssVar('--grid') } };
    const bars = display === 'bar' || display === 'stacked' ? uPlot.paths.bars({ size: [0.7, 40] }) : undefined;
    const opts = {
      width: box.current.clientWidth || 600,
      height,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [axis, { ...axis, size: 60 }],
      series: [
        {},
        ...shown.map((s) => ({
          label: s.label,
          stroke: seriesColor(s.i),
          fill: bars ? seriesColor(s.i) : undefined,
          width: 2,
          paths: bars,
          points: { show: xs.length < 40 },
        })),
      ],
    };
    // Stacked: draw the highest sum first so each band shows.
    const order = display === 'stacked' ? [...data.keys()].reverse() : [...data.keys()];
    const plot = new uPlot(
      { ...opts, series: [{}, ...order.map((k) => opts.series[k + 1])] },
      [xs, ...order.map((k) => data[k])],
      box.current,
    );
    // The element, not the ref: the ref is null once the chart gives way to its table.
    const el = box.current;
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [labels, series, display, hidden, asTable, tick, height]);

  const totals = series.map((s) => s.data.reduce((a, b) => a + (b ?? 0), 0));
  const peak = Math.max(0, ...series.flatMap((s) => s.data.map((v) => v ?? 0)));
  const summary =
    `${title}: ${series.length} series from ${labels[0] ?? '—'} to ${labels[labels.length - 1] ?? '—'}; ` +
    series.map((s, i) => `${s.label} total ${format(totals[i])}`).join(', ') +
    `; peak ${format(peak)}.`;
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
              <button type="button" class="legend-item" aria-pressed={!hidden.has(i)} onClick={() => toggle(i)}>
                <span class="swatch" style={{ background: `var(--series-${i % 8})` }} aria-hidden="true" />
                {s.label} <span class="muted">{format(totals[i])}</span>
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
            onClick={() => downloadCSV(`${title || 'chart'}.csv`, ['date', ...series.map((s) => s.label)], labels.map((l, j) => [l, ...series.map((s) => s.data[j])]))}
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
                <th scope="col">Date</th>
                {series.map((s) => (
                  <th scope="col" class="num">
                    {s.label}
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
        <div ref={box} class="chart-canvas" role="img" aria-label={summary} />
      )}
      <figcaption class="sr-only">{summary}</figcaption>
    </figure>
  );
}

// BarList shows values by label as horizontal bars in plain HTML (top N breakdowns).
export function BarList({ title, items }) {
  const max = Math.max(1, ...items.map((i) => i.value));
  return (
    <ol class="bar-list" aria-label={title}>
      {items.map((i) => (
        <li>
          <span class="bar" style={{ width: `${(100 * i.value) / max}%` }} aria-hidden="true" />
          <span class="bar-label">{i.label}</span>
          <span class="bar-value">{format(i.value)}</span>
        </li>
      ))}
    </ol>
  );
}

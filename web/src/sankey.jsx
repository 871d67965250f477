// A paths insight drawn as a Sankey diagram, in SVG: a column of nodes per step (the
// pages or events persons were on at that step), and between two steps a band per
// edge as thick as the paths that took it. Hovering a band or a node shows its count
// (under the drawing, and as an SVG title); the drawing is one Tab stop whose arrow keys
// go from band to band, each read out with its count; a table of the same edges can
// replace the drawing (the insight screen's CSV saves them).
import { useEffect, useRef, useState } from 'preact/hooks';
import { duration } from './insight-result.jsx';
import { format } from './ui.jsx';

// stepOf splits a node's id ("2_/pricing") into its step and its name.
export function stepOf(id) {
  const m = /^(\d+)_(.*)$/s.exec(id);
  return m ? { step: Number(m[1]), name: m[2] } : { step: 1, name: id };
}

// shortName is how a node is labelled: a page's URL without its scheme and host.
function shortName(name) {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/]+(\/.*)?$/i.exec(name);
  return m ? m[1] || '/' : name || '(none)';
}

// paths says n paths.
const paths = (n) => `${format(n)} ${n === 1 ? 'path' : 'paths'}`;

// cut shortens text to n characters, the last an ellipsis.
function cut(text, n) {
  return text.length <= n ? text : text.slice(0, Math.max(1, n - 1)) + '…';
}

// layout places the nodes and bands of edges in a box of width × height.
function layout(edges, width, height) {
  const nodes = new Map();
  const node = (id) => {
    if (!nodes.has(id)) nodes.set(id, { id, ...stepOf(id), in: 0, out: 0 });
    return nodes.get(id);
  };
  const links = edges.map((e) => {
    const l = { ...e, from: node(e.source), to: node(e.target) };
    l.from.out += e.value;
    l.to.in += e.value;
    return l;
  });
  const steps = [...new Set([...nodes.values()].map((n) => n.step))].sort((a, b) => a - b);
  const columns = steps.map((s) =>
    [...nodes.values()].filter((n) => n.step === s).map((n) => ({ ...n, value: Math.max(n.in, n.out) })),
  );
  const pad = 10, nodeW = 12, top = 4;
  const plotH = height - 2 * top;
  const k = Math.min(...columns.map((c) => (plotH - pad * (c.length - 1)) / Math.max(1, c.reduce((a, n) => a + n.value, 0))));
  const gap = columns.length > 1 ? (width - nodeW) / (columns.length - 1) : 0;
  const placed = new Map();
  columns.forEach((c, i) => {
    c.sort((a, b) => b.value - a.value || a.name.localeCompare(b.name));
    let y = top;
    c.forEach((n) => {
      const h = Math.max(2, n.value * k);
      placed.set(n.id, { ...n, x: columns.length > 1 ? i * gap : (width - nodeW) / 2, y, h, w: nodeW, column: i, last: i === columns.length - 1, inY: y, outY: y });
      y += h + pad;
    });
  });
  // Bands leave a node top to bottom in the order of where they go, and reach one in
  // the order of where they come from, so that they do not cross at their ends.
  const bands = links
    .map((l) => ({ ...l, from: placed.get(l.source), to: placed.get(l.target), w: Math.max(1, l.value * k) }))
    .sort((a, b) => a.from.y - b.from.y || a.to.y - b.to.y);
  for (const b of bands) {
    b.y0 = b.from.outY + b.w / 2;
    b.from.outY += b.w;
  }
  for (const b of [...bands].sort((a, c) => a.to.y - c.to.y || a.from.y - c.from.y)) {
    b.y1 = b.to.inY + b.w / 2;
    b.to.inY += b.w;
  }
  return { nodes: [...placed.values()], bands, gap, steps: steps.length };
}

// Sankey draws edges [{source, target, value, average_conversion_time}], PostHog's
// paths, at height.
export function Sankey({ title, edges, height = 360 }) {
  const box = useRef();
  const [width, setWidth] = useState(600);
  const [asTable, setAsTable] = useState(false);
  // hot is the band (source→target) or node (its id) hovered or focused.
  const [hot, setHot] = useState(null);
  const [cursor, setCursor] = useState(0);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    setWidth(el.clientWidth || 600);
    const resize = new ResizeObserver(() => el.clientWidth && setWidth(el.clientWidth));
    resize.observe(el);
    return () => resize.disconnect();
  }, [asTable]);
  if (!edges.length) return <p class="empty">No paths of two steps or more in this range.</p>;
  const label = (id) => {
    const s = stepOf(id);
    return `${s.step}. ${s.name}`;
  };
  const rows = edges.map((e) => ({ ...e, from: label(e.source), to: label(e.target) }));
  const summary =
    `${title}: ${edges.length} edges; ` +
    [...edges]
      .sort((a, b) => b.value - a.value)
      .slice(0, 5)
      .map((e) => `${label(e.source)} to ${label(e.target)} ${format(e.value)}`)
      .join(', ') +
    (edges.length > 5 ? ', and more.' : '.');
  const drawW = Math.max(200, width);
  // The line under the drawing that reads out the band hovered takes 24 px of height.
  const drawH = Math.max(120, height - 24);
  const plot = !asTable && layout(edges, drawW, drawH);
  // Labels sit right of their node (left of the last column's), within a step's room.
  const room = plot ? Math.max(3, Math.floor((plot.steps > 1 ? plot.gap - 24 : drawW / 2 - 24) / 7)) : 0;
  const lit = (b) => hot && (hot === b.source || hot === b.target || hot === `${b.source}→${b.target}`);
  const says = (b) =>
    `${label(b.source)} → ${label(b.target)}: ${paths(b.value)}` + (b.average_conversion_time ? `, ${duration(b.average_conversion_time / 1000)} on average` : '');
  const nodeSays = (n) => `${n.step}. ${n.name}: ${paths(n.value)}${n.out < n.value && n.step > 1 ? `, ${format(n.value - n.out)} ${n.value - n.out === 1 ? 'ends' : 'end'} here` : ''}`;
  const hotBand = plot && plot.bands.find((b) => `${b.source}→${b.target}` === hot);
  const hotNode = plot && plot.nodes.find((n) => n.id === hot);
  const hotText = hotBand ? says(hotBand) : hotNode ? nodeSays(hotNode) : '';
  // move answers an arrow key on band i: focus goes to the band before or after.
  const move = (e, i) => {
    const k = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
    if (!k) return;
    e.preventDefault();
    const next = (i + k + plot.bands.length) % plot.bands.length;
    setCursor(next);
    e.currentTarget.ownerSVGElement.querySelector(`[data-band="${next}"]`).focus();
  };
  return (
    <figure class="chart sankey">
      <div class="chart-tools">
        <span />
        <div class="chart-buttons">
          <button type="button" class="secondary" aria-pressed={asTable} onClick={() => setAsTable(!asTable)}>
            {asTable ? 'Show chart' : 'Show table'}
          </button>
        </div>
      </div>
      {asTable ? (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">{title}</caption>
            <thead>
              <tr>
                <th scope="col">From</th>
                <th scope="col">To</th>
                <th scope="col" class="num">
                  Paths
                </th>
                <th scope="col" class="num">
                  Average time
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr>
                  <td>
                    <span class="clip" title={r.from}>
                      {r.from}
                    </span>
                  </td>
                  <td>
                    <span class="clip" title={r.to}>
                      {r.to}
                    </span>
                  </td>
                  <td class="num">{format(r.value)}</td>
                  <td class="num">{r.average_conversion_time ? duration(r.average_conversion_time / 1000) : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <div ref={box} class="chart-canvas">
          <svg class="plot sankey-plot" width={drawW} height={drawH} role="group" aria-label={summary} onMouseLeave={() => setHot(null)}>
            {plot.bands.map((b, i) => {
              const x0 = b.from.x + b.from.w, x1 = b.to.x, xm = (x0 + x1) / 2;
              return (
                <path
                  class={`sankey-link${lit(b) ? ' lit' : ''}`}
                  data-source={b.source}
                  data-target={b.target}
                  data-value={b.value}
                  d={`M${x0.toFixed(1)},${b.y0.toFixed(1)}C${xm.toFixed(1)},${b.y0.toFixed(1)} ${xm.toFixed(1)},${b.y1.toFixed(1)} ${x1.toFixed(1)},${b.y1.toFixed(1)}`}
                  stroke-width={b.w.toFixed(1)}
                  data-band={i}
                  tabindex={i === Math.min(cursor, plot.bands.length - 1) ? 0 : -1}
                  role="img"
                  aria-label={says(b)}
                  onMouseEnter={() => setHot(`${b.source}→${b.target}`)}
                  onFocus={() => {
                    setCursor(i);
                    setHot(`${b.source}→${b.target}`);
                  }}
                  onBlur={() => setHot(null)}
                  onKeyDown={(e) => move(e, i)}
                >
                  <title>{says(b)}</title>
                </path>
              );
            })}
            {plot.nodes.map((n) => {
              const name = shortName(n.name);
              return (
                <g class="sankey-node" data-node={n.id} aria-hidden="true" onMouseEnter={() => setHot(n.id)}>
                  <title>{nodeSays(n)}</title>
                  <rect x={n.x} y={n.y} width={n.w} height={n.h} rx="2" />
                  <text x={n.last && plot.steps > 1 ? n.x - 5 : n.x + n.w + 5} y={n.y + n.h / 2} dy="0.32em" text-anchor={n.last && plot.steps > 1 ? 'end' : 'start'}>
                    {cut(name, room)} <tspan class="sankey-count">{format(n.value)}</tspan>
                  </text>
                </g>
              );
            })}
          </svg>
          <p class="muted sankey-hot" aria-hidden="true">
            {hotText || 'Hover or focus a band for its paths.'}
          </p>
        </div>
      )}
      <figcaption class="sr-only">{summary}</figcaption>
    </figure>
  );
}

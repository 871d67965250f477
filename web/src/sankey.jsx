// A paths insight drawn as a Sankey diagram, in SVG: a column of nodes per step (the
// pages or events persons were on at that step), and between two steps a band per
// edge as thick as the paths that took it. Hovering a band or a node shows its count
// (under the drawing, and as an SVG title); the drawing is one Tab stop whose arrow keys
// go from band to band, then node to node (and the part of a node where paths end),
// each read out with its count; a table of
// the same edges can replace the drawing (the insight screen's CSV saves them). With
// the query as it ran, clicking a band (or Enter on it) lists the persons whose paths
// took it, a node those whose paths reached it, and a node's darker lower part those
// whose paths ended there (PostHog's pathStartKey, pathEndKey and pathDropoffKey).
import { useEffect, useRef, useState } from 'preact/hooks';
import { duration } from './insight-result.jsx';
import { PersonsDialog } from './persons-dialog.jsx';
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

// pathsCount is the persons dialog's column of a paths' persons: their paths through
// the edge or node.
const pathsCount = { column: 'event_count', label: 'Paths', show: (v) => v };

// Sankey draws edges [{source, target, value, average_conversion_time}], PostHog's
// paths, at height. With project and ran (the PathsQuery as it ran), bands and nodes
// open their persons.
export function Sankey({ title, edges, height = 360, project, ran }) {
  const box = useRef();
  const [width, setWidth] = useState(600);
  const [asTable, setAsTable] = useState(false);
  // hot is the band (source→target) or node (its id) hovered or focused.
  const [hot, setHot] = useState(null);
  const [cursor, setCursor] = useState(0);
  // open is the band or node whose persons are shown: {keys, title, opener}.
  const [open, setOpen] = useState(null);
  const pressed = useRef(null);
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
  const canDrill = !!(project && ran);
  // The Tab stop's arrow keys go through the bands, then (when they open persons) the
  // nodes: stop k is band k, or node k - bands.
  // ends are the nodes some paths end at (past the first step; at the last column's
  // all do, and its node lists them), whose lower part, where no band leaves, is a
  // stop of its own that lists those persons (PostHog's pathDropoffKey).
  const endsOf = (n) => (n.step > 1 && !n.last ? n.value - n.out : 0);
  const ends = plot && canDrill ? plot.nodes.filter((n) => endsOf(n) > 0) : [];
  const stopCount = plot ? plot.bands.length + (canDrill ? plot.nodes.length + ends.length : 0) : 0;
  // move answers an arrow key on stop i: focus goes to the stop before or after.
  const move = (e, i) => {
    const k = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
    if (!k) return;
    e.preventDefault();
    const next = (i + k + stopCount) % stopCount;
    setCursor(next);
    e.currentTarget.ownerSVGElement.querySelector(`[data-stop="${next}"]`).focus();
  };
  // press is what a band or node answers to, stop i opening keys (the pathsFilter's
  // keys of its persons) under title: a click, or Enter or Space, which open on their
  // release so that the key's own events land before the dialog takes focus.
  const press = (i, keys, title) => {
    // A node's handlers are its group's, whose rect is what takes focus.
    const opens = (e) => setOpen({ keys, title, opener: e.currentTarget.querySelector('[data-stop]') || e.currentTarget });
    return {
      onClick: canDrill ? opens : undefined,
      onKeyDown: (e) => {
        if (canDrill && (e.key === 'Enter' || e.key === ' ')) {
          e.preventDefault();
          pressed.current = i;
        } else move(e, i);
      },
      onKeyUp: (e) => {
        if (canDrill && (e.key === 'Enter' || e.key === ' ') && pressed.current === i) {
          e.preventDefault();
          pressed.current = null;
          opens(e);
        }
      },
    };
  };
  const closed = () => {
    const opener = open && open.opener;
    setOpen(null);
    if (opener && opener.isConnected) opener.focus();
  };
  const tabStop = (i) => (i === Math.min(cursor, stopCount - 1) ? 0 : -1);
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
                  data-stop={i}
                  tabindex={tabStop(i)}
                  role={canDrill ? 'button' : 'img'}
                  aria-label={says(b) + (canDrill ? ', show persons' : '')}
                  onMouseEnter={() => setHot(`${b.source}→${b.target}`)}
                  onFocus={() => {
                    setCursor(i);
                    setHot(`${b.source}→${b.target}`);
                  }}
                  onBlur={() => setHot(null)}
                  {...press(i, { pathStartKey: b.source, pathEndKey: b.target }, `${label(b.source)} → ${label(b.target)}`)}
                >
                  <title>{says(b)}</title>
                </path>
              );
            })}
            {plot.nodes.map((n, k) => {
              const name = shortName(n.name);
              const i = plot.bands.length + k;
              // The node's rect is the button (its label, cut short, is drawn
              // beside it for the eye only); the group takes the click on either.
              const button = canDrill
                ? {
                    'data-stop': i,
                    tabindex: tabStop(i),
                    role: 'button',
                    'aria-label': `${nodeSays(n)}, show persons`,
                    onFocus: () => {
                      setCursor(i);
                      setHot(n.id);
                    },
                    onBlur: () => setHot(null),
                  }
                : {};
              return (
                <g
                  class={`sankey-node${canDrill ? ' drill' : ''}`}
                  data-node={n.id}
                  aria-hidden={canDrill ? undefined : 'true'}
                  onMouseEnter={() => setHot(n.id)}
                  {...(canDrill ? press(i, { pathEndKey: n.id }, `Reached ${label(n.id)}`) : {})}
                >
                  <title>{nodeSays(n)}</title>
                  <rect x={n.x} y={n.y} width={n.w} height={n.h} rx="2" {...button} />
                  <text
                    aria-hidden="true"
                    x={n.last && plot.steps > 1 ? n.x - 5 : n.x + n.w + 5}
                    y={n.y + n.h / 2}
                    dy="0.32em"
                    text-anchor={n.last && plot.steps > 1 ? 'end' : 'start'}
                  >
                    {cut(name, room)} <tspan class="sankey-count">{format(n.value)}</tspan>
                  </text>
                </g>
              );
            })}
            {ends.map((n, k) => {
              const i = plot.bands.length + plot.nodes.length + k;
              const h = Math.max(2, (n.h * endsOf(n)) / n.value);
              const endSays = `${n.step}. ${n.name}: ${paths(endsOf(n))} ${endsOf(n) === 1 ? 'ends' : 'end'} here`;
              return (
                <rect
                  class="sankey-end"
                  data-end={n.id}
                  data-stop={i}
                  x={n.x}
                  y={n.y + n.h - h}
                  width={n.w}
                  height={h}
                  rx="2"
                  tabindex={tabStop(i)}
                  role="button"
                  aria-label={`${endSays}, show persons`}
                  onMouseEnter={() => setHot(n.id)}
                  onFocus={() => {
                    setCursor(i);
                    setHot(n.id);
                  }}
                  onBlur={() => setHot(null)}
                  {...press(i, { pathDropoffKey: n.id }, `Ended at ${label(n.id)}`)}
                >
                  <title>{endSays}</title>
                </rect>
              );
            })}
          </svg>
          <p class="muted sankey-hot" aria-hidden="true">
            {hotText || 'Hover or focus a band for its paths.'}
          </p>
        </div>
      )}
      <figcaption class="sr-only">{summary}</figcaption>
      {open && (
        <PersonsDialog
          key={JSON.stringify(open.keys)}
          project={project}
          source={{ kind: 'InsightActorsQuery', source: { ...ran, pathsFilter: { ...(ran.pathsFilter || {}), ...open.keys } } }}
          title={open.title}
          count={pathsCount}
          close={closed}
        />
      )}
    </figure>
  );
}

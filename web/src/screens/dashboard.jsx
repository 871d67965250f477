// A dashboard: its tiles on PostHog's 12-column grid in their "sm" layouts, a date
// range and property filters over every tile (dashboard-filters.jsx), each tile's
// time computed and a refresh, and for those who may edit it: moving and resizing tiles by
// dragging or by keyboard (saved at once with PATCH tiles[].layouts), text cards,
// removing tiles, and the public link. The grid and its tiles are also the public
// shared page's (shared.jsx), read only.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { InsightResult } from '../insight-result.jsx';
import { sourceOf } from '../query-source.js';
import { Link, navigate, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { CopyButton, ErrorNote, Field, Loading, Page, downloadCSV, relativeTime, useAsync } from '../ui.jsx';
import { DashboardFilters, viewFilters } from './dashboard-filters.jsx';
import { Deleted, useRequest } from './manage.jsx';

// The grid's geometry: PostHog's 12 columns; rows of ROW px with GAP px between.
export const COLS = 12;
const ROW = 56;
const GAP = 12;

// clampLayout keeps a layout on the grid: 1 to 12 columns wide, at least one row high,
// never past the right edge or above the top.
export function clampLayout(l) {
  const w = Math.min(COLS, Math.max(1, l.w));
  const h = Math.max(1, l.h);
  return { x: Math.min(COLS - w, Math.max(0, l.x)), y: Math.max(0, l.y), w, h };
}

// The grid behaves as PostHog's (react-grid-layout, compacted vertically): a tile
// without a layout goes to the first free spot, a moved tile pushes aside the tiles it
// covers, and every tile rises as far as it can, so no gap is left where a tile was.

const overlaps = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

// byPlace orders layout keys of layouts top to bottom, then left to right.
const byPlace = (layouts) => (a, b) => layouts[a].y - layouts[b].y || layouts[a].x - layouts[b].x || a - b;

// firstFree is the first spot, topmost then leftmost, where a w×h tile fits beside
// taken (a list of layouts): new tiles fill the grid's holes and right half instead of
// stacking in its left half.
export function firstFree(taken, w, h) {
  for (let y = 0; ; y++) {
    for (let x = 0; x + w <= COLS; x++) {
      const l = { x, y, w, h };
      if (!taken.some((o) => overlaps(o, l))) return l;
    }
  }
}

// compact raises every tile (top ones first) as far as the tiles above it allow, as
// react-grid-layout's vertical compaction does. fixed, when given, is the key of a
// tile being moved: it stays where it is held and the others flow around it.
export function compact(layouts, fixed) {
  const out = {};
  const done = [];
  if (fixed !== undefined) {
    out[fixed] = layouts[fixed];
    done.push(layouts[fixed]);
  }
  for (const k of Object.keys(layouts).sort(byPlace(layouts))) {
    if (k === String(fixed)) continue;
    const l = { ...layouts[k] };
    while (l.y > 0 && !done.some((o) => overlaps(o, { ...l, y: l.y - 1 }))) l.y--;
    for (let hit; (hit = done.find((o) => overlaps(o, l))); ) l.y = hit.y + hit.h;
    done.push(l);
    out[k] = l;
  }
  return out;
}

// placed gives every tile its sm layout, compacted; a tile without one (an insight
// added to the dashboard through the API) takes the first free spot, six columns wide,
// two rows high for a text card and five for an insight.
export function placed(tiles) {
  const out = {};
  for (const t of tiles) {
    const l = t.layouts && t.layouts.sm;
    if (l && Number.isFinite(l.x) && Number.isFinite(l.y)) out[t.id] = clampLayout({ x: l.x, y: l.y, w: l.w || 6, h: l.h || 5 });
  }
  for (const t of tiles) {
    if (!out[t.id]) out[t.id] = firstFree(Object.values(out), 6, t.text ? 2 : 5);
  }
  return compact(out);
}

// moveTo puts tile id at layout l, held there while it moves (compact's fixed), and
// answers the new layouts by tile id. A tile it now covers goes above it when there
// is room there (how react-grid-layout swaps two tiles), else below it, pushing down
// the tiles that one covers in turn.
export function moveTo(layouts, id, l) {
  const key = String(id);
  const next = { ...layouts, [key]: clampLayout(l) };
  const moved = next[key];
  const queue = [];
  for (const k of Object.keys(next).filter((k) => k !== key && overlaps(moved, next[k])).sort(byPlace(next))) {
    const above = { ...next[k], y: Math.max(0, moved.y - next[k].h) };
    if (!Object.keys(next).some((o) => o !== k && overlaps(above, next[o]))) {
      next[k] = above;
    } else {
      next[k] = { ...next[k], y: moved.y + moved.h };
      queue.push(k);
    }
  }
  while (queue.length) {
    const k = queue.shift();
    for (const other of Object.keys(next)) {
      if (other === k || other === key || !overlaps(next[k], next[other])) continue;
      next[other] = { ...next[other], y: next[k].y + next[k].h };
      queue.push(other);
    }
  }
  return compact(next, key);
}

// tileName is what a tile is called: its insight's name, or "Text".
export function tileName(t) {
  return t.insight ? t.insight.name || 'Untitled insight' : 'Text';
}

// drawn are the insight kinds InsightResult draws as charts, not as rows.
const drawn = ['TrendsQuery', 'FunnelsQuery', 'RetentionQuery', 'PathsQuery', 'StickinessQuery', 'LifecycleQuery'];

// resultOf is an insight's result as InsightResult takes it: the drawn kinds answer
// {results: [...]} in an insight, the list itself in InsightResult.
export function resultOf(insight) {
  const r = insight.result;
  const kind = sourceOf(insight.query) && sourceOf(insight.query).kind;
  if (drawn.includes(kind) && r && !Array.isArray(r) && Array.isArray(r.results)) return r.results;
  return r;
}

// timezoneOf is the time zone an insight's result was computed in (trends and funnels
// answer the project's), which its chart counts intervals in: a tile's "today" is the
// project's, not the browser's.
function timezoneOf(insight) {
  const r = insight.result;
  return (r && !Array.isArray(r) && r.timezone) || undefined;
}

// tileQuery is the query a tile's insight was computed for, which the persons behind its
// points, steps, cohorts, bars, bands and nodes are listed from: its insight's query under the layers of
// filters (the dashboard's, the tile's filters_overrides, the URL's range), applied as
// hedge applies them (admin/dashboard_filters.go): a date_from or date_to set replaces
// that end of the range; a later layer's properties replace an earlier's, and are
// added to the query's own. null for a query of another kind.
export function tileQuery(insight, layers) {
  const q = sourceOf(insight.query);
  if (!q || !['TrendsQuery', 'RetentionQuery', 'FunnelsQuery', 'StickinessQuery', 'LifecycleQuery', 'PathsQuery'].includes(q.kind)) return null;
  let from = null;
  let to = null;
  let props = null;
  for (const l of layers) {
    if (!l || typeof l !== 'object' || Array.isArray(l)) continue;
    if (l.date_from !== undefined && l.date_from !== null) from = l.date_from;
    if (l.date_to !== undefined && l.date_to !== null) to = l.date_to;
    if (Array.isArray(l.properties)) props = l.properties;
  }
  const out = { ...q };
  if (from !== null || to !== null) {
    out.dateRange = { ...(q.dateRange || {}) };
    if (from !== null) out.dateRange.date_from = from;
    if (to !== null) out.dateRange.date_to = to;
  }
  if (props && props.length) {
    if (!q.properties) out.properties = props;
    else if (Array.isArray(q.properties)) out.properties = [...q.properties, ...props];
    else out.properties = { type: 'AND', values: [q.properties, { type: 'AND', values: props }] };
  }
  return out;
}

// describe says where a layout is, for the live region while a tile moves.
function describe(name, l) {
  return `${name}: column ${l.x + 1}, row ${l.y + 1}, ${l.w} wide, ${l.h} high.`;
}

// Grid lays tiles out. With edit set (an object of callbacks) each tile has a move
// handle (drag, or arrows and Shift+arrows), a resize corner and a Remove button.
// layouts are by tile id; a tile not in them yet (just fetched) takes its own.
// filters, the dashboard's and the URL's (null while they and the tiles disagree),
// let a trend tile's points list their persons.
export function Grid({ tiles, layouts, project, edit, announce, filters }) {
  const own = useMemo(() => placed(tiles), [tiles]);
  return (
    <div class="dash-grid">
      {tiles.map((t) => (
        <Tile key={t.id} tile={t} layout={layouts[t.id] || own[t.id]} project={project} edit={edit} announce={announce} filters={filters} />
      ))}
    </div>
  );
}

function Tile({ tile, layout, project, edit, announce, filters }) {
  const name = tileName(tile);
  const headId = `tile-${tile.id}-title`;
  const kind = tile.insight && (sourceOf(tile.insight.query) || {}).kind;
  const rows = tile.insight && !drawn.includes(kind);
  // A web analytics table's cells are [current, previous] pairs: no CSV of them.
  const web = kind === 'WebOverviewQuery' || kind === 'WebStatsTableQuery';
  const height = Math.max(80, layout.h * ROW + (layout.h - 1) * GAP - 105);
  return (
    <article
      class={edit && edit.active === tile.id ? 'tile tile-moving' : 'tile'}
      aria-labelledby={headId}
      data-tile={tile.id}
      style={{ '--col': layout.x + 1, '--row': layout.y + 1, '--w': layout.w, '--h': layout.h }}
    >
      <header class="tile-head">
        {edit && <MoveHandle tile={tile} name={name} layout={layout} edit={edit} announce={announce} />}
        <h2 id={headId}>
          {tile.insight && project ? <Link href={projectPath(project, 'insights/' + tile.insight.short_id)}>{name}</Link> : name}
        </h2>
        <div class="tile-tools">
          {tile.last_refresh && (
            <span class="muted tile-computed" title={`Computed ${new Date(tile.last_refresh).toLocaleString()}`}>
              {relativeTime(tile.last_refresh)}
            </span>
          )}
          {rows && !web && tile.insight.result && tile.insight.result.columns && (
            <button
              type="button"
              class="secondary"
              aria-label={`Download ${name} as CSV`}
              onClick={() => downloadCSV(`${name}.csv`, tile.insight.result.columns, tile.insight.result.results || [])}
            >
              CSV
            </button>
          )}
          {edit && (
            <button type="button" class="secondary small" aria-label={`Remove ${name}`} onClick={() => edit.remove(tile)}>
              Remove
            </button>
          )}
        </div>
      </header>
      <div
        class="tile-body"
        tabindex={rows ? 0 : undefined}
        role={rows ? 'region' : undefined}
        aria-labelledby={rows ? headId : undefined}
      >
        {tile.text ? (
          <TextBody body={tile.text.body} />
        ) : tile.insight.query_error ? (
          <p class="error-note">{tile.insight.query_error}</p>
        ) : (
          <InsightResult
            query={tile.insight.query}
            result={resultOf(tile.insight)}
            title={name}
            height={height}
            timezone={timezoneOf(tile.insight)}
            project={project}
            ran={project && filters ? tileQuery(tile.insight, [filters[0], tile.filters_overrides, filters[1]]) : null}
          />
        )}
      </div>
      {edit && <ResizeCorner tile={tile} layout={layout} edit={edit} />}
    </article>
  );
}

// TextBody shows a text card: paragraphs split at blank lines, as plain text.
function TextBody({ body }) {
  return (
    <div class="tile-text">
      {body.split(/\n\s*\n/).map((p) => (
        <p>{p}</p>
      ))}
    </div>
  );
}

// cellOf is the size of one grid step in px (a column with its gap, a row with its
// gap), read from the grid element around el.
function cellOf(el) {
  const grid = el.closest('.dash-grid');
  return { x: (grid.clientWidth + GAP) / COLS, y: ROW + GAP };
}

// useDrag follows a pointer pressed on an element and calls change with the whole
// grid steps it has moved by; done when it is released (with whether it moved).
function useDrag(change, done) {
  const start = useRef(null);
  return {
    onPointerDown: (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      e.currentTarget.setPointerCapture(e.pointerId);
      start.current = { x: e.clientX, y: e.clientY, cell: cellOf(e.currentTarget), dx: 0, dy: 0 };
    },
    onPointerMove: (e) => {
      const s = start.current;
      if (!s) return;
      const dx = Math.round((e.clientX - s.x) / s.cell.x);
      const dy = Math.round((e.clientY - s.y) / s.cell.y);
      if (dx !== s.dx || dy !== s.dy) {
        s.dx = dx;
        s.dy = dy;
        change(dx, dy);
      }
    },
    onPointerUp: () => {
      const s = start.current;
      start.current = null;
      if (s) done(s.dx !== 0 || s.dy !== 0);
    },
    onPointerCancel: () => {
      start.current = null;
      done(false, true);
    },
  };
}

// MoveHandle moves its tile: dragged with a pointer, or focused and driven by arrows
// (one cell), Shift+arrows (resize by one cell), Enter (save) and Escape (put back).
// Leaving it with Tab saves too, so no move is lost.
function MoveHandle({ tile, name, layout, edit, announce }) {
  const origin = useRef(null);
  const begin = () => {
    if (!origin.current) origin.current = layout;
    edit.setActive(tile.id);
  };
  const end = (save) => {
    const from = origin.current;
    origin.current = null;
    edit.setActive(null);
    if (!from) return;
    if (save) edit.save(tile);
    else edit.revert(tile);
  };
  const drag = useDrag(
    (dx, dy) => {
      begin();
      const from = origin.current;
      const next = { ...from, x: from.x + dx, y: from.y + dy };
      edit.preview(tile.id, next);
      announce(describe(name, clampLayout(next)));
    },
    (moved, cancelled) => end(moved && !cancelled),
  );
  const onKeyDown = (e) => {
    const step = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[e.key];
    if (step) {
      e.preventDefault();
      begin();
      const now = edit.layoutOf(tile.id);
      const next = e.shiftKey ? { ...now, w: now.w + step[0], h: now.h + step[1] } : { ...now, x: now.x + step[0], y: now.y + step[1] };
      edit.preview(tile.id, next);
      announce(describe(name, clampLayout(next)) + ' Enter saves, Escape puts it back.');
    } else if (e.key === 'Enter' || e.key === 'Escape') {
      e.preventDefault();
      end(e.key === 'Enter');
    }
  };
  return (
    <button
      type="button"
      class="move-handle secondary small"
      aria-label={`Move ${name}`}
      aria-describedby="move-help"
      aria-pressed={edit.active === tile.id}
      onKeyDown={onKeyDown}
      onBlur={() => origin.current && end(true)}
      {...drag}
    >
      <span aria-hidden="true">⠿</span>
    </button>
  );
}

// ResizeCorner resizes its tile by dragging; keyboard users resize with Shift+arrows
// on the move handle, so the corner is not a separate stop.
function ResizeCorner({ tile, layout, edit }) {
  const origin = useRef(null);
  const drag = useDrag(
    (dx, dy) => {
      if (!origin.current) origin.current = layout;
      edit.setActive(tile.id);
      edit.preview(tile.id, { ...origin.current, w: origin.current.w + dx, h: origin.current.h + dy });
    },
    (moved) => {
      const from = origin.current;
      origin.current = null;
      edit.setActive(null);
      if (from && moved) edit.save(tile);
      else if (from) edit.revert(tile);
    },
  );
  return <div class="resize-corner" aria-hidden="true" title="Drag to resize" {...drag} />;
}

// canEdit reports whether the signed-in user may change the dashboard (PostHog's
// effective privilege: 37 edits, 21 views).
export const canEdit = (d) => d.effective_privilege_level >= 37;

export function Dashboard({ project, id, params }) {
  const view = viewFilters(params);
  const override = view ? JSON.stringify(view) : '';
  const base = `/api/projects/${project}/dashboards/${id}/`;
  // refreshing is set by Refresh for the one load it starts, which asks hedge to
  // compute every tile afresh (?refresh=true) rather than serve its cache.
  const [refreshing, setRefreshing] = useState(0);
  const { data, error, loading, reload } = useAsync(async (signal) => {
    const query = new URLSearchParams();
    if (override) query.set('filters_override', override);
    if (refreshing) query.set('refresh', 'true');
    try {
      return await api(base + (query.size ? '?' + query : ''), { signal });
    } finally {
      if (refreshing && !signal.aborted) setRefreshing(0);
    }
  }, [base, override, refreshing]);
  if (error && !data) {
    return (
      <Page title="Dashboard">
        <ErrorNote error={error} />
      </Page>
    );
  }
  if (!data) return <Loading />;
  // Keyed by the dashboard, so opening another (a duplicate just made) starts afresh.
  return (
    <DashboardView
      key={data.id}
      project={project}
      base={base}
      dashboard={data}
      error={error}
      loading={loading}
      reload={reload}
      params={params}
      refresh={() => setRefreshing(Date.now())}
      refreshing={!!refreshing}
    />
  );
}

// oldestComputed is the earliest last_refresh of the tiles' results, if any.
function oldestComputed(tiles) {
  const times = tiles.map((t) => t.last_refresh).filter(Boolean);
  return times.length ? times.reduce((a, b) => (new Date(a) < new Date(b) ? a : b)) : null;
}

function DashboardView({ project, base, dashboard, error, loading, reload, params, refresh, refreshing }) {
  const editable = canEdit(dashboard);
  const editing = editable && params.get('edit') === '1';
  const tiles = dashboard.tiles;
  const [layouts, setLayouts] = useState(() => placed(tiles));
  const saved = useRef(layouts);
  const [active, setActive] = useState(null);
  const [status, setStatus] = useState('');
  const [failure, setFailure] = useState(null);
  const [removed, setRemoved] = useState(null);
  const [dialog, setDialog] = useState(null);
  const [deleted, setDeleted] = useState(false);
  useEffect(() => {
    const l = placed(tiles);
    saved.current = l;
    setLayouts(l);
  }, [tiles]);

  const patch = async (body, done) => {
    try {
      setFailure(null);
      setRemoved(null); // Undo undoes only the last change
      await api(base, { method: 'PATCH', body });
      setStatus(done);
      return true;
    } catch (e) {
      setFailure(e);
      return false;
    }
  };
  // layoutsRef is the layouts now, also between renders (keys come fast).
  const layoutsRef = useRef(layouts);
  layoutsRef.current = layouts;
  // saveLayouts compacts the grid with the moved tile let go (it rises into any room
  // above it too) and sends the layouts that differ from the saved ones: the moved
  // tile, the tiles it pushed, the tiles that rose, and any tile placed here because
  // hedge had no layout for it.
  const saveLayouts = async (tile) => {
    const current = compact(layoutsRef.current);
    layoutsRef.current = current;
    setLayouts(current);
    const changed = tiles.filter((t) => !(t.layouts && t.layouts.sm) || JSON.stringify(current[t.id]) !== JSON.stringify(saved.current[t.id]));
    if (!changed.length) return;
    const ok = await patch(
      { tiles: changed.map((t) => ({ id: t.id, layouts: { ...(t.layouts || {}), sm: current[t.id] } })) },
      `${tileName(tile)} saved at column ${current[tile.id].x + 1}, row ${current[tile.id].y + 1}.`,
    );
    if (ok) saved.current = current;
    else setLayouts(saved.current);
  };

  const edit = editing && {
    active,
    setActive,
    layoutOf: (tileId) => layoutsRef.current[tileId],
    // preview puts a tile at l, the others where they were saved (pushed if covered).
    preview: (tileId, l) => {
      layoutsRef.current = moveTo(saved.current, tileId, l);
      setLayouts(layoutsRef.current);
    },
    save: saveLayouts,
    revert: (tile) => {
      setLayouts(saved.current);
      setStatus(`${tileName(tile)} put back.`);
    },
    remove: async (tile) => {
      if (await patch({ tiles: [{ id: tile.id, deleted: true }] }, `${tileName(tile)} removed.`)) {
        setRemoved(tile);
        reload();
      }
    },
  };
  const undoRemove = async () => {
    const tile = removed;
    setRemoved(null);
    if (await patch({ tiles: [{ id: tile.id, deleted: false }] }, `${tileName(tile)} is back.`)) reload();
  };

  const name = dashboard.name || 'Untitled dashboard';
  if (deleted) {
    return (
      <Deleted
        title="Dashboard deleted"
        name={name}
        listHref={projectPath(project, 'dashboards')}
        listLabel="Back to dashboards"
        undo={async () => {
          await api(base, { method: 'PATCH', body: { deleted: false } });
          setDeleted(false);
          setStatus(`${name} is back.`);
          reload();
        }}
      />
    );
  }
  return (
    <Page
      title={dashboard.name || 'Untitled dashboard'}
      wide
      actions={
        <>
          {editable && (
            <button type="button" class="secondary" onClick={() => setDialog('insight')}>
              Add insight
            </button>
          )}
          {editing && (
            <button type="button" class="secondary" onClick={() => setDialog('text')}>
              Add text
            </button>
          )}
          {editable && (
            <button type="button" class="secondary" onClick={() => setQuery({ edit: editing ? null : '1' })} aria-pressed={editing}>
              {editing ? 'Done editing' : 'Edit layout'}
            </button>
          )}
          {editable && (
            <button type="button" onClick={() => setDialog('share')}>
              Share
            </button>
          )}
        </>
      }
    >
      <Manage project={project} base={base} dashboard={dashboard} editable={editable} reload={reload} setStatus={setStatus} onDeleted={() => setDeleted(true)} />
      <DashboardFilters
        filters={dashboard.filters || {}}
        params={params}
        editable={editable}
        patch={patch}
        reload={reload}
        refresh={refresh}
        refreshing={refreshing}
        computedAt={oldestComputed(tiles)}
      />
      {dashboard.description && <p class="muted dash-description">{dashboard.description}</p>}
      <ErrorNote error={failure || error} />
      <p class="sr-only" id="move-help">
        Arrow keys move the tile by one cell, Shift with arrow keys resizes it, Enter saves, Escape puts it back.
      </p>
      <div class="dash-status" role="status">
        {loading ? 'Updating…' : status}
        {removed && (
          <button type="button" class="link" onClick={undoRemove}>
            Undo
          </button>
        )}
      </div>
      {tiles.length === 0 ? (
        editable ? (
          <div class="empty dash-empty">
            <p>This dashboard is empty. Add an insight you saved or a new one, or a text card.</p>
            <div class="row">
              <button type="button" onClick={() => setDialog('insight')}>
                Add insight
              </button>
              <button type="button" class="secondary" onClick={() => setDialog('text')}>
                Add text
              </button>
            </div>
          </div>
        ) : (
          <p class="empty">This dashboard has no tiles yet.</p>
        )
      ) : (
        <Grid
          tiles={tiles}
          layouts={layouts}
          project={project}
          edit={edit}
          announce={setStatus}
          filters={loading ? null : [dashboard.filters, viewFilters(params)]}
        />
      )}
      {dialog === 'text' && (
        <TextDialog
          close={() => setDialog(null)}
          add={async (body) => {
            const ok = await patch({ tiles: [{ text: { body }, layouts: { sm: firstFree(Object.values(layoutsRef.current), 6, 2) } }] }, 'Text card added.');
            if (ok) reload();
            return ok;
          }}
          error={failure}
        />
      )}
      {dialog === 'share' && <ShareDialog base={base} close={() => setDialog(null)} />}
      {dialog === 'insight' && (
        <InsightDialog
          project={project}
          dashboard={dashboard}
          close={() => setDialog(null)}
          add={async (insight) => {
            // The insight joins the dashboard through its dashboards field (PostHog's
            // way), which makes a tile without a layout; the tile is then put in the
            // grid's first free spot.
            try {
              setFailure(null);
              const updated = await api(`/api/projects/${project}/insights/${insight.id}/`, {
                method: 'PATCH',
                body: { dashboards: [...insight.dashboards, dashboard.id] },
              });
              const tile = updated.dashboard_tiles.find((t) => t.dashboard_id === dashboard.id);
              const spot = firstFree(Object.values(layoutsRef.current), 6, 5);
              await api(base, { method: 'PATCH', body: { tiles: [{ id: tile.id, layouts: { sm: spot } }] } });
              setStatus(`${insight.name || 'Untitled insight'} added at column ${spot.x + 1}, row ${spot.y + 1}.`);
              reload();
              return null;
            } catch (e) {
              return e;
            }
          }}
        />
      )}
    </Page>
  );
}

// Manage renames the dashboard in place (PATCH name), duplicates it as PostHog does
// (POST use_dashboard: a new dashboard named "… (copy)" with the same tiles, their
// insights shared, opened at once) and deletes it (soft, onDeleted shows Undo; its
// insights stay). Renaming and deleting are for its editors only; anyone who sees it
// may duplicate it into a dashboard of their own.
function Manage({ project, base, dashboard, editable, reload, setStatus, onDeleted }) {
  const [renaming, setRenaming] = useState(false);
  const [name, setName] = useState('');
  const req = useRequest();
  const current = dashboard.name || 'Untitled dashboard';
  const rename = async (e) => {
    e.preventDefault();
    const done = await req.run(() => api(base, { method: 'PATCH', body: { name: name.trim() } }));
    if (done) {
      setRenaming(false);
      setStatus(`Renamed to ${done.name}.`);
      reload();
    }
  };
  const duplicate = () =>
    req.run(async () => {
      const made = await api(`/api/projects/${project}/dashboards/`, { method: 'POST', body: { name: `${current} (copy)`, use_dashboard: dashboard.id } });
      navigate(projectPath(project, `dashboard/${made.id}`));
    });
  const remove = () =>
    req.run(async () => {
      await api(base, { method: 'PATCH', body: { deleted: true } });
      onDeleted();
    });
  return (
    <>
      {renaming ? (
        <form class="dash-manage" onSubmit={rename} aria-label="Rename dashboard">
          <Field label="Name" name="name" error={req.error}>
            <input value={name} required maxLength={400} onInput={(e) => setName(e.target.value)} autofocus />
          </Field>
          <button type="submit" class="small" disabled={req.busy}>
            Save name
          </button>
          <button type="button" class="secondary small" onClick={() => setRenaming(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <div class="dash-manage">
          {editable && (
            <button
              type="button"
              class="secondary small"
              disabled={req.busy}
              onClick={() => {
                setName(dashboard.name || '');
                setRenaming(true);
              }}
            >
              Rename
            </button>
          )}
          <button type="button" class="secondary small" disabled={req.busy} onClick={duplicate}>
            Duplicate
          </button>
          {editable && (
            <button type="button" class="secondary small" disabled={req.busy} onClick={remove}>
              Delete
            </button>
          )}
        </div>
      )}
      <ErrorNote error={req.error} fields={renaming ? ['name'] : []} />
    </>
  );
}

// Modal is a native modal dialog (focus kept inside, Escape closes) opened on mount.
function Modal({ title, close, children }) {
  const ref = useRef();
  useEffect(() => {
    ref.current.showModal();
  }, []);
  return (
    <dialog ref={ref} class="modal" aria-labelledby="modal-title" onClose={close}>
      <h2 id="modal-title">{title}</h2>
      {children}
    </dialog>
  );
}

function TextDialog({ close, add, error }) {
  const [body, setBody] = useState('');
  return (
    <Modal title="Add a text card" close={close}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (await add(body)) close();
        }}
      >
        <ErrorNote error={error} fields={['tiles__0__text__body']} />
        <Field label="Text" name="tiles__0__text__body" error={error} hint="Blank lines start a new paragraph.">
          <textarea rows="5" maxLength={4000} value={body} onInput={(e) => setBody(e.target.value)} required />
        </Field>
        <div class="row">
          <button type="submit">Add</button>
          <button type="button" class="secondary" onClick={close}>
            Cancel
          </button>
        </div>
      </form>
    </Modal>
  );
}

// InsightDialog adds a saved insight to the dashboard, found by name, or goes to the
// builder for a new one, which is saved onto this dashboard. add answers null when the
// insight was added, else the error. Insights already on the dashboard are marked, and
// those the user may only view (on a dashboard they cannot edit) cannot be added.
function InsightDialog({ project, dashboard, close, add }) {
  const [search, setSearch] = useState('');
  const [failure, setFailure] = useState(null);
  const [busy, setBusy] = useState(null);
  const list = useAsync(
    (signal) => api(`/api/projects/${project}/insights/?limit=20&search=${encodeURIComponent(search.trim())}`, { signal }),
    [project, search],
  );
  const choose = async (insight) => {
    setBusy(insight.id);
    const err = await add(insight);
    setBusy(null);
    if (err) setFailure(err);
    else close();
  };
  const rows = (list.data && list.data.results) || [];
  return (
    <Modal title="Add an insight" close={close}>
      <ErrorNote error={failure || list.error} />
      <Field label="Search insights by name" name="insight_search">
        <input type="search" value={search} onInput={(e) => setSearch(e.target.value)} autofocus />
      </Field>
      {list.loading && !list.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <p class="empty">{search.trim() ? `No insight's name contains “${search.trim()}”.` : 'No saved insights yet.'}</p>
      ) : (
        <ul class="insight-picks" aria-label="Saved insights">
          {rows.map((i) => {
            const name = i.name || 'Untitled insight';
            const here = i.dashboards.includes(dashboard.id);
            const viewOnly = i.effective_privilege_level < 37;
            return (
              <li key={i.id}>
                <span class="insight-pick-name">{name}</span>
                {here ? (
                  <span class="muted">On this dashboard</span>
                ) : viewOnly ? (
                  <span class="muted">View only</span>
                ) : (
                  <button type="button" class="secondary small" aria-label={`Add ${name}`} disabled={busy !== null} onClick={() => choose(i)}>
                    {busy === i.id ? 'Adding…' : 'Add'}
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      <div class="row">
        <Link class="button" href={projectPath(project, `insights/new?dashboard=${dashboard.id}`)}>
          New insight
        </Link>
        <form method="dialog">
          <button type="submit" class="secondary">
            Cancel
          </button>
        </form>
      </div>
    </Modal>
  );
}

// refreshChoices are the public page's ?refresh= values (seconds) offered.
const refreshChoices = [
  ['', "Don't refresh"],
  ['60', 'Every minute'],
  ['300', 'Every 5 minutes'],
  ['900', 'Every 15 minutes'],
];

// ShareDialog turns the public link on and off, builds it with its options, and
// rotates it (the old link stops working).
function ShareDialog({ base, close }) {
  const { data, error, reload } = useAsync((signal) => api(base + 'sharing/', { signal }), [base]);
  const [failure, setFailure] = useState(null);
  const [refresh, setRefresh] = useState('');
  const [dark, setDark] = useState(false);
  const [note, setNote] = useState('');
  const change = async (path, method, body, said) => {
    try {
      setFailure(null);
      await api(base + path, { method, body });
      setNote(said);
      reload();
    } catch (e) {
      setFailure(e);
    }
  };
  const qs = new URLSearchParams();
  if (refresh) qs.set('refresh', refresh);
  if (dark) qs.set('theme', 'dark');
  const suffix = qs.toString() ? '?' + qs : '';
  const link = data && `${location.origin}/shared/${data.access_token}${suffix}`;
  return (
    <Modal title="Share dashboard" close={close}>
      <ErrorNote error={failure || error} />
      {!data ? (
        <Loading />
      ) : (
        <>
          <label class="check">
            <input
              type="checkbox"
              checked={data.enabled}
              onChange={(e) => change('sharing/', 'PATCH', { enabled: e.target.checked }, e.target.checked ? 'Anyone with the link can view.' : 'Sharing is off.')}
            />
            Anyone with the link can view this dashboard
          </label>
          {data.enabled && (
            <>
              <Field label="Public link" name="share_link">
                <input readonly value={link} onFocus={(e) => e.target.select()} />
              </Field>
              <div class="row share-options">
                <Field label="Refresh" name="share_refresh">
                  <select value={refresh} onChange={(e) => setRefresh(e.target.value)}>
                    {refreshChoices.map(([v, label]) => (
                      <option value={v}>{label}</option>
                    ))}
                  </select>
                </Field>
                <label class="check">
                  <input type="checkbox" checked={dark} onChange={(e) => setDark(e.target.checked)} /> Dark theme
                </label>
              </div>
              <Field label="Embed code" name="share_embed">
                <input readonly value={`<iframe src="${location.origin}/embedded/${data.access_token}${suffix}" width="100%" height="800" frameborder="0"></iframe>`} />
              </Field>
              <div class="row">
                <CopyButton text={link} label="Copy link" />
                <a class="button secondary" href={link} target="_blank" rel="noopener noreferrer">
                  Open
                </a>
                <button type="button" class="secondary" onClick={() => change('sharing/refresh/', 'POST', undefined, 'New link made: the old one no longer works.')}>
                  Rotate link
                </button>
              </div>
              <p class="hint">Rotating makes a new link; whoever holds the old one loses access.</p>
            </>
          )}
        </>
      )}
      <p role="status" class="share-note">
        {note}
      </p>
      <form method="dialog">
        <button type="submit" class="secondary">
          Close
        </button>
      </form>
    </Modal>
  );
}

// PersonsDialog lists the persons behind a point of an insight (PostHog's persons
// modal): a trend's point, a retention's cohort, a funnel's step, a stickiness' or a
// lifecycle's bar, a paths' edge or node; the query API's ActorsQuery over an
// InsightActorsQuery (a funnel's: a FunnelsActorsQuery), most events (or returns)
// first, 100 at a time. A native modal <dialog>: focus stays inside, Escape and Close
// close it, and the caller puts focus back on the point.
import { useEffect, useRef, useState } from 'preact/hooks';
import { query } from './api.js';
import { Link } from './router.jsx';
import { projectPath } from './session.jsx';
import { ErrorNote, PagesStatus, Table } from './ui.jsx';

const pageSize = 100;

// events is a trend point's column: each person's events in it.
const events = { column: 'event_count', label: 'Events', show: (v) => v };

// personName is what a person is called: their name, else a distinct id, else the uuid.
function personName(p) {
  return p.name || (p.distinct_ids && p.distinct_ids[0]) || p.uuid;
}

// PersonsDialog opens on mount; source is the InsightActorsQuery of the point, title
// names the point ("Signups on 26-Nov-2026"), close is called once it has closed.
// count is the column beside the person: its name in the query, its heading and how
// its value is shown (a trend point's events by default; event_count is a number as
// it is, whatever its heading).
export function PersonsDialog({ project, source, title, close, count = events }) {
  const ref = useRef();
  const [state, setState] = useState({ rows: null, more: false, next: 0, loading: true, error: null });
  const load = async (offset, signal) => {
    setState((s) => ({ ...s, loading: true, error: null }));
    try {
      const r = await query(project, { kind: 'ActorsQuery', select: ['actor', count.column], limit: pageSize, offset, source }, signal);
      setState((s) => ({
        rows: [...(offset ? s.rows || [] : []), ...r.results.map(([actor, n]) => ({ actor, count: n }))],
        more: !!r.hasMore,
        next: (r.offset ?? offset) + (r.limit || pageSize),
        loading: false,
        error: null,
      }));
    } catch (error) {
      if (error.name !== 'AbortError') setState((s) => ({ ...s, loading: false, error }));
    }
  };
  useEffect(() => {
    ref.current.showModal();
    const ctl = new AbortController();
    load(0, ctl.signal);
    return () => ctl.abort();
  }, []);
  const pages = { ...state, loadMore: () => load(state.next) };
  return (
    <dialog ref={ref} class="modal persons-dialog" aria-labelledby="persons-title" onClose={close}>
      <h2 id="persons-title">{title}</h2>
      <ErrorNote error={state.error} />
      {state.rows && (
        <Table
          columns={[
            {
              key: 'person',
              label: 'Person',
              render: (r) => (
                <Link href={projectPath(project, `persons/${encodeURIComponent(r.actor.uuid || r.actor.id)}`)} class="clip">
                  {personName(r.actor)}
                </Link>
              ),
            },
            { key: 'count', label: count.label, numeric: count.column === 'event_count', render: count.column === 'event_count' ? undefined : (r) => count.show(r.count) },
          ]}
          rows={state.rows}
          empty="No persons here."
        />
      )}
      <PagesStatus pages={pages} label="persons" one="person" />
      <div class="confirm-actions">
        <button type="button" class="secondary" onClick={() => ref.current.close()}>
          Close
        </button>
      </div>
    </dialog>
  );
}

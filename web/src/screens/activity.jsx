// Activity: the project's events as they arrive. The tail is keyed on created_at (when
// hedge committed the event), not on timestamp, so a late event with an old timestamp
// still shows up. New events go on top only while the reader is at the top of the page
// with no row open; otherwise they wait behind an "N new events" button, so that what
// is being read never moves. Polling pauses while the tab is hidden and once that
// button holds more than maxPending events (PostHog's events table was most of its API
// load from tabs nobody looked at).
import { useEffect, useRef, useState } from 'preact/hooks';
import { hogql, query } from '../api.js';
import { Link, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Loading, Page, format, useAsync } from '../ui.jsx';

const pollEvery = 2000;
const pageSize = 100;
// pollLimit is how many rows a poll reads; more (with the lookback) means a burst.
const pollLimit = 500;
// maxPending is how many waiting events stop the polling: past it the button reloads.
const maxPending = 100;
// lookback re-reads this much before the newest commit seen, so that a commit that
// lands out of order is not skipped; rows already shown are dropped by uuid.
const lookback = 5000;
const timeShape = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;

// select is what a row needs; person_display_name also joins the event's current
// person, so a merged person's link goes to the person it was merged into.
export const select = ['uuid', 'event', 'distinct_id', 'timestamp', 'properties', 'created_at', 'person_display_name'];

// loadEvents runs an EventsQuery under the screen's filters, newest commit first; the
// uuid makes the order total, so that pages by offset neither repeat nor skip a row.
async function loadEvents(project, filters, { where = [], offset = 0, limit = pageSize }, signal) {
  const q = { kind: 'EventsQuery', select, after: 'all', orderBy: ['created_at DESC', 'timestamp DESC', 'uuid DESC'], where, limit, offset };
  if (filters.event) q.event = filters.event;
  if (filters.key) {
    // A key alone asks for events that have the property at all.
    q.properties = [filters.value ? { key: filters.key, value: filters.value, operator: 'exact', type: 'event' } : { key: filters.key, operator: 'is_set', type: 'event' }];
  }
  const r = await query(project, q, signal);
  return { rows: r.results.map(toEvent), hasMore: r.hasMore };
}

export function toEvent([uuid, event, distinctId, timestamp, properties, createdAt, person]) {
  return {
    uuid,
    event,
    distinctId,
    timestamp,
    createdAt,
    properties: typeof properties === 'string' ? JSON.parse(properties || '{}') : properties || {},
    person: person && person.id ? { id: person.id, name: person.display_name } : null,
  };
}

// since is the where item of a poll: created_at from lookback before the newest commit
// seen. The time is formatted here from a Date, never taken from input.
function since(createdAt) {
  return `created_at >= '${new Date(new Date(createdAt).getTime() - lookback).toISOString()}'`;
}

export function Activity({ project, params }) {
  const filters = { event: params.get('event') || '', key: params.get('key') || '', value: params.get('value') || '' };
  return (
    <Page title="Activity" wide>
      <Filters key={`${filters.key}|${filters.value}`} project={project} filters={filters} />
      <LiveEvents key={`${project}|${filters.event}|${filters.key}|${filters.value}`} project={project} filters={filters} />
    </Page>
  );
}

// Filters chooses the event name (suggested from the last 30 days) and one property.
function Filters({ project, filters }) {
  const names = useAsync(
    (signal) =>
      hogql(project, 'SELECT event, count() FROM events WHERE timestamp > now() - INTERVAL 30 DAY GROUP BY event ORDER BY count() DESC, event LIMIT 200', signal).then((r) =>
        r.results.map((row) => row[0]),
      ),
    [project],
  );
  const [key, setKey] = useState(filters.key);
  const [value, setValue] = useState(filters.value);
  const options = names.data || [];
  // An event named in the URL but not seen lately is still a choice.
  const choices = filters.event && !options.includes(filters.event) ? [filters.event, ...options] : options;
  return (
    <form
      class="activity-filters row"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ key: key.trim(), value: key.trim() ? value : '' });
      }}
    >
      <div class="field">
        <label for="activity-event">Event</label>
        <select id="activity-event" value={filters.event} onChange={(e) => setQuery({ event: e.target.value })}>
          <option value="">All events</option>
          {choices.map((n) => (
            <option value={n} title={n}>
              {clip(n, 60)}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="activity-key">Property</label>
        <input id="activity-key" placeholder="$browser" value={key} onInput={(e) => setKey(e.target.value)} />
      </div>
      <div class="field">
        <label for="activity-value">equals</label>
        <input id="activity-value" placeholder="any value" value={value} onInput={(e) => setValue(e.target.value)} />
      </div>
      <button type="submit" class="secondary">
        Filter
      </button>
      {(filters.event || filters.key) && (
        <button
          type="button"
          class="link"
          onClick={() => {
            setKey('');
            setValue('');
            setQuery({ event: null, key: null, value: null });
          }}
        >
          Clear filters
        </button>
      )}
      <ErrorNote error={names.error} />
    </form>
  );
}

// clip shortens a name to max characters for a control that cannot cut it itself (an
// option); the full name stays in its value and title.
function clip(name, max) {
  return name.length > max ? name.slice(0, max - 1) + '…' : name;
}

// LiveEvents is the table and its tail; it starts over when the filters change.
function LiveEvents({ project, filters }) {
  const [state, setState] = useState({ rows: null, pending: [], error: null, older: 0, hasMore: false, loadingOlder: false });
  const [open, setOpen] = useState(() => new Set());
  const live = useRef({ seen: new Set(), newest: null, anchor: null, capped: false });
  const stateRef = useRef(state);
  stateRef.current = state;
  const openRef = useRef(open);
  openRef.current = open;
  const [restart, setRestart] = useState(0);

  // The first page, then a poll every pollEvery while the tab is visible.
  useEffect(() => {
    const ctl = new AbortController();
    let timer = null;
    let stopped = false;
    const l = (live.current = { seen: new Set(), newest: null, anchor: null, capped: false });
    const note = (rows) => {
      for (const r of rows) l.seen.add(r.uuid);
      if (rows.length && (!l.newest || Date.parse(rows[0].createdAt) > Date.parse(l.newest))) l.newest = rows[0].createdAt;
    };
    const poll = async () => {
      timer = null;
      if (stopped || document.visibilityState === 'hidden' || l.capped) return;
      try {
        const { rows, hasMore } = await loadEvents(project, filters, { where: l.newest ? [since(l.newest)] : [], limit: pollLimit }, ctl.signal);
        const fresh = rows.filter((r) => !l.seen.has(r.uuid));
        note(fresh);
        const hold = stateRef.current.pending.length > 0 || window.scrollY > 0 || openRef.current.size > 0;
        if (hasMore && !hold) {
          // More arrived than a poll reads: start over with the newest page.
          setRestart((n) => n + 1);
          return;
        }
        if (hold && fresh.length) l.capped = hasMore || stateRef.current.pending.length + fresh.length > maxPending;
        setState((s) => {
          if (!fresh.length) return s.error ? { ...s, error: null } : s;
          return hold ? { ...s, pending: [...fresh, ...s.pending], error: null } : { ...s, rows: [...fresh, ...s.rows], error: null };
        });
      } catch (error) {
        if (error.name === 'AbortError') return;
        setState((s) => ({ ...s, error }));
      }
      schedule();
    };
    const schedule = () => {
      if (!stopped && !timer) timer = setTimeout(poll, pollEvery);
    };
    const onVisible = () => {
      if (document.visibilityState === 'visible') schedule();
    };
    document.addEventListener('visibilitychange', onVisible);
    (async () => {
      try {
        const { rows, hasMore } = await loadEvents(project, filters, {}, ctl.signal);
        note(rows);
        l.anchor = l.newest;
        setState({ rows, pending: [], error: null, older: rows.length, hasMore, loadingOlder: false });
        schedule();
      } catch (error) {
        if (error.name !== 'AbortError') setState((s) => ({ ...s, error }));
      }
    })();
    return () => {
      stopped = true;
      clearTimeout(timer);
      ctl.abort();
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [restart]);

  const showPending = () => {
    window.scrollTo(0, 0);
    if (live.current.capped) {
      // Past the cap polling stopped, so events may be missing: start over.
      setOpen(new Set());
      setRestart((n) => n + 1);
      return;
    }
    setState((s) => ({ ...s, rows: [...s.pending, ...s.rows], pending: [] }));
  };

  // Older pages come from below the first page's newest commit, so that events
  // arriving meanwhile do not shift the offset.
  const loadOlder = async () => {
    const s = stateRef.current;
    setState((cur) => ({ ...cur, loadingOlder: true }));
    try {
      // The anchor is hedge's own time, to the microsecond; its shape is checked.
      const anchor = live.current.anchor;
      const where = anchor && timeShape.test(anchor) ? [`created_at <= '${anchor}'`] : [];
      const { rows, hasMore } = await loadEvents(project, filters, { where, offset: s.older });
      const l = live.current;
      const fresh = rows.filter((r) => !l.seen.has(r.uuid));
      for (const r of fresh) l.seen.add(r.uuid);
      setState((cur) => ({ ...cur, rows: [...cur.rows, ...fresh], older: cur.older + rows.length, hasMore, loadingOlder: false }));
    } catch (error) {
      setState((cur) => ({ ...cur, error, loadingOlder: false }));
    }
  };

  const toggle = (uuid) =>
    setOpen((o) => {
      const n = new Set(o);
      n.has(uuid) ? n.delete(uuid) : n.add(uuid);
      return n;
    });

  const { rows, pending, error } = state;
  return (
    <div class="activity">
      <div class="activity-status" role="status" aria-live="polite">
        {pending.length > 0 ? (
          <button type="button" class="new-events" onClick={showPending}>
            {live.current.capped ? `More than ${maxPending} new events: show the latest` : `${pending.length} new ${pending.length === 1 ? 'event' : 'events'}`}
          </button>
        ) : (
          rows && <span class="muted">Live: new events appear at the top while you are at the top of the page.</span>
        )}
      </div>
      <ErrorNote error={error} />
      {!rows && error && (
        <button type="button" class="secondary" onClick={() => setRestart((n) => n + 1)}>
          Try again
        </button>
      )}
      {!rows ? !error && <Loading label="Loading events…" /> : <EventTable project={project} rows={rows} open={open} toggle={toggle} />}
      {rows && state.hasMore && (
        <p>
          <button type="button" class="secondary" onClick={loadOlder} disabled={state.loadingOlder}>
            {state.loadingOlder ? 'Loading…' : 'Load older events'}
          </button>
        </p>
      )}
    </div>
  );
}

// EventTable lists events; a row's button (or a click anywhere on the row) opens its
// properties under it, and the arrow keys move between rows.
export function EventTable({ project, rows, open, toggle, showPerson = true }) {
  if (rows.length === 0) return <p class="empty">No events match yet. They appear here as hedge receives them.</p>;
  const onKeyDown = (e) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const buttons = [...e.currentTarget.querySelectorAll('button.event-toggle')];
    const i = buttons.indexOf(document.activeElement);
    if (i < 0) return;
    e.preventDefault();
    const next = buttons[i + (e.key === 'ArrowDown' ? 1 : -1)];
    next && next.focus();
  };
  return (
    <div class="table-wrap">
      <table class="events">
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">{showPerson ? 'Person' : 'Distinct ID'}</th>
            <th scope="col">URL / screen</th>
            <th scope="col">Time</th>
          </tr>
        </thead>
        <tbody onKeyDown={onKeyDown}>
          {rows.map((r) => (
            <EventRow key={r.uuid} project={project} r={r} isOpen={open.has(r.uuid)} toggle={toggle} showPerson={showPerson} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function EventRow({ project, r, isOpen, toggle, showPerson }) {
  const url = r.properties.$current_url || r.properties.$screen_name || r.properties.$pathname || '';
  const detail = `event-${r.uuid}`;
  return (
    <>
      <tr class={isOpen ? 'event-row open' : 'event-row'} onClick={(e) => !e.target.closest('a, button') && toggle(r.uuid)}>
        <td>
          <button
            type="button"
            class="event-toggle"
            title={r.event}
            aria-expanded={isOpen ? 'true' : 'false'}
            aria-controls={isOpen ? detail : undefined}
            onClick={() => toggle(r.uuid)}
          >
            <span aria-hidden="true" class="caret">
              {isOpen ? '▾' : '▸'}
            </span>
            {r.event}
          </button>
        </td>
        <td>
          <span class="clip event-person" title={showPerson && r.person ? r.person.name || r.distinctId : r.distinctId}>
            {showPerson && r.person ? (
              <Link href={projectPath(project, `persons/${encodeURIComponent(r.person.id)}`)}>{r.person.name || r.distinctId}</Link>
            ) : (
              r.distinctId
            )}
          </span>
        </td>
        <td>
          <span class="clip event-url" title={url || undefined}>
            {url}
          </span>
        </td>
        <td>
          <time datetime={r.timestamp} title={r.timestamp}>
            {when(r.timestamp)}
          </time>
        </td>
      </tr>
      {isOpen && (
        <tr class="event-detail" id={detail}>
          <td colSpan={4}>
            <Properties
              title={`Properties of ${r.event}`}
              props={{ distinct_id: r.distinctId, uuid: r.uuid, timestamp: r.timestamp, received: r.createdAt, ...r.properties }}
            />
          </td>
        </tr>
      )}
    </>
  );
}

// Properties is a key/value table of an object, keys in order.
export function Properties({ title, props }) {
  const keys = Object.keys(props).sort((a, b) => a.localeCompare(b));
  if (keys.length === 0) return <p class="empty">No properties.</p>;
  return (
    <table class="props">
      <caption class="sr-only">{title}</caption>
      <tbody>
        {keys.map((k) => (
          <tr>
            <th scope="row">{k}</th>
            <td>{format(props[k])}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// when shows a time in the reader's zone, with the date only when not today.
export function when(iso) {
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  const opts = today ? { hour: '2-digit', minute: '2-digit', second: '2-digit' } : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' };
  return d.toLocaleString('en-US', opts);
}

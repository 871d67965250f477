// Small pieces every screen uses: the page frame, errors in hedge's shape shown where
// they belong, loading state, tables and CSV downloads.
import { cloneElement } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { setQuery } from './router.jsx';

// Page frames a screen: its <h1> (also the document title) and actions beside it.
export function Page({ title, actions, children, wide }) {
  useEffect(() => {
    document.title = title ? `${title} · hedge` : 'hedge';
  }, [title]);
  return (
    <section class={wide ? 'page page-wide' : 'page'}>
      <header class="page-head">
        <h1>{title}</h1>
        {actions && <div class="page-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

// ErrorNote shows an error that belongs to no field (or to a field not on screen).
export function ErrorNote({ error, fields = [] }) {
  if (!error || (error.attr && fields.includes(error.attr))) return null;
  return (
    <p class="error-note" role="alert">
      {error.message}
    </p>
  );
}

// Field is a labelled control with hedge's error for it (the error whose attr is name)
// shown under it and tied to it for screen readers.
export function Field({ label, name, error, hint, children }) {
  const id = `field-${name}`;
  const mine = error && error.attr === name ? error.message : null;
  const described = [hint && `${id}-hint`, mine && `${id}-error`].filter(Boolean).join(' ') || undefined;
  const control = Array.isArray(children) ? children[0] : children;
  return (
    <div class={mine ? 'field field-invalid' : 'field'}>
      <label for={id}>{label}</label>
      {control && cloneElement(control, { id, name, 'aria-invalid': mine ? 'true' : undefined, 'aria-describedby': described })}
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {mine && (
        <small id={`${id}-error`} class="field-error" role="alert">
          {mine}
        </small>
      )}
    </div>
  );
}

// useAsync runs load (given an AbortSignal) whenever deps change and keeps its answer;
// reload runs it again. An answer that arrives after deps changed is dropped.
export function useAsync(load, deps) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !ctl.signal.aborted && error.name !== 'AbortError' && setState({ data: undefined, error, loading: false }),
    );
    return () => ctl.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

export function Loading({ label = 'Loading…' }) {
  return (
    <p class="loading" role="status">
      {label}
    </p>
  );
}

// Table is a plain data table: columns are {key, label, render?, numeric?}.
export function Table({ columns, rows, caption, rowKey, onRowClick, empty = 'Nothing here yet.' }) {
  if (!rows || rows.length === 0) return <p class="empty">{empty}</p>;
  return (
    <div class="table-wrap">
      <table>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={rowKey ? rowKey(r) : i} onClick={onRowClick && (() => onRowClick(r))}>
              {columns.map((c) => (
                <td class={c.numeric ? 'num' : undefined}>{c.render ? c.render(r) : format(r[c.key])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// format shows a value of a query's answer as text.
export function format(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isInteger(v) ? v.toLocaleString('en-US') : v.toLocaleString('en-US', { maximumFractionDigits: 4 });
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// downloadCSV saves rows (arrays) under header as a CSV file.
export function downloadCSV(filename, header, rows) {
  const cell = (v) => {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  const text = [header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// CopyButton copies text and says so.
export function CopyButton({ text, label = 'Copy' }) {
  const [done, setDone] = useState(false);
  const timer = useRef();
  useEffect(() => () => clearTimeout(timer.current), []);
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
          timer.current = setTimeout(() => setDone(false), 2000);
        } catch {
          setDone(false);
        }
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

// relativeTime says how long ago an ISO time was.
export function relativeTime(iso) {
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return s <= 1 ? 'just now' : `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' });
}

// Pager moves a list's offset (kept in the query string) by pageSize, for an API page
// of PostHog's shape ({previous, next}); label names it for assistive technology.
export function Pager({ label, page, offset, pageSize }) {
  if (!page.previous && !page.next) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" class="secondary" disabled={!page.previous} onClick={() => setQuery({ offset: Math.max(0, offset - pageSize) || null })}>
        Previous
      </button>
      <button type="button" class="secondary" disabled={!page.next} onClick={() => setQuery({ offset: offset + pageSize })}>
        Next
      </button>
    </nav>
  );
}

// usePages loads a list a page at a time, newest page last: fetchPage(offset, signal)
// answers {rows, more}. It starts again from the first page when deps change;
// loadMore appends the next page.
export function usePages(fetchPage, deps) {
  const [state, setState] = useState({ rows: null, more: false, loading: true, error: null });
  const load = async (offset, signal) => {
    setState((s) => ({ ...s, loading: true }));
    try {
      const page = await fetchPage(offset, signal);
      setState((s) => ({ rows: offset ? [...s.rows, ...page.rows] : page.rows, more: page.more, loading: false, error: null }));
    } catch (error) {
      if (error.name !== 'AbortError') setState((s) => ({ ...s, loading: false, error }));
    }
  };
  useEffect(() => {
    const ctl = new AbortController();
    load(0, ctl.signal);
    return () => ctl.abort();
  }, deps);
  return { ...state, loadMore: () => load(state.rows.length) };
}

// PagesStatus says how many of a usePages list are shown (label, or one for a single
// row), and offers the next page.
export function PagesStatus({ pages, label = 'events', one = 'event' }) {
  return (
    <>
      <div role="status" class="history-status">
        {pages.loading ? (
          <Loading label={`Loading ${label}…`} />
        ) : (
          pages.rows &&
          pages.rows.length > 0 && (
            <span class="muted">
              {pages.rows.length} {pages.rows.length === 1 ? one : label} shown{pages.more ? '' : ', all there are'}.
            </span>
          )
        )}
      </div>
      {pages.more && !pages.loading && (
        <button type="button" class="secondary" onClick={pages.loadMore}>
          Load more
        </button>
      )}
    </>
  );
}

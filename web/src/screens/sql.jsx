// The SQL editor: HogQL over the project's events, persons and groups. Ctrl/Cmd+Enter
// runs; Tab indents, but Esc then Tab leaves the editor so the keyboard is never
// trapped. The last queries are kept in this browser, and a schema panel (read from
// hedge with HogQL) inserts table, column and property names at the cursor. A running
// query can be cancelled: the browser stops waiting and hedge stops the query (DELETE
// .../query/{client_query_id}/). An answer is shown a page of pageRows rows at a time,
// so that 100,000 rows cost the page no more than 100 do.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, hogql } from '../api.js';
import { setQuery } from '../router.jsx';
import { ErrorNote, Field, Loading, Page, downloadCSV, format, useAsync } from '../ui.jsx';

// pageRows is how many rows of an answer the table holds at once.
export const pageRows = 100;

// queryID names a query for its cancel: random, from the browser's generator (which
// plain-HTTP pages have too, unlike crypto.randomUUID).
function queryID() {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

const starter = 'SELECT event, count()\nFROM events\nWHERE timestamp > now() - INTERVAL 7 DAY\nGROUP BY event\nORDER BY 2 DESC\nLIMIT 100';
const historySize = 20;

const historyKey = (project) => `hedge-sql-history-${project}`;

function readHistory(project) {
  try {
    const h = JSON.parse(localStorage.getItem(historyKey(project)) || '[]');
    return Array.isArray(h) ? h : [];
  } catch {
    return [];
  }
}

// remember puts sql first in the history, once, keeping the newest historySize.
function remember(project, sql) {
  const h = [sql, ...readHistory(project).filter((s) => s !== sql)].slice(0, historySize);
  localStorage.setItem(historyKey(project), JSON.stringify(h));
  return h;
}

export function SQL({ project, params }) {
  const [text, setText] = useState(() => params.get('q') || readHistory(project)[0] || starter);
  // run is the last query's state: running (its id and AbortController), its answer or
  // error, when it started, how long until its answer was on screen (shownMs), and
  // what a cancel came to (cancelled).
  const [run, setRun] = useState({ result: null, error: null, running: null, started: 0, shownMs: null, cancelled: '' });
  const [history, setHistory] = useState(() => readHistory(project));
  const area = useRef();
  const escaped = useRef(false);
  // live is the running query, which leaving the screen cancels too.
  const live = useRef(null);
  useEffect(
    () => () => {
      const running = live.current;
      if (!running) return;
      running.ctl.abort();
      stop(project, running.id).catch(() => {});
    },
    [],
  );

  const execute = async () => {
    const sql = text.trim();
    if (!sql || run.running) return;
    const running = { id: queryID(), ctl: new AbortController() };
    const started = performance.now();
    live.current = running;
    setRun((r) => ({ ...r, running, started, cancelled: '' }));
    setQuery({ q: sql });
    setHistory(remember(project, sql));
    try {
      const result = await api(`/api/projects/${project}/query/`, {
        method: 'POST',
        body: { query: { kind: 'HogQLQuery', query: sql }, client_query_id: running.id },
        signal: running.ctl.signal,
      });
      setRun({ result, error: null, running: null, started, shownMs: null, cancelled: '' });
    } catch (error) {
      if (error.name === 'AbortError') return; // cancel() said what became of it
      setRun({ result: null, error, running: null, started, shownMs: null, cancelled: '' });
    } finally {
      if (live.current === running) live.current = null;
    }
  };

  // cancel stops waiting for the running query and has hedge stop it, then says whether
  // hedge found it still running.
  const cancel = async () => {
    const running = run.running;
    if (!running) return;
    running.ctl.abort();
    setRun((r) => ({ ...r, running: null, cancelled: 'Cancelling…' }));
    let said;
    try {
      const answer = await stop(project, running.id);
      said = answer && answer.message === 'Query cancelled' ? 'Cancelled: hedge stopped the query.' : 'Cancelled: the query had already ended.';
    } catch (error) {
      said = `Cancelled here, but hedge could not be told to stop the query: ${error.message}`;
    }
    setRun((r) => (r.running ? r : { ...r, cancelled: said }));
  };

  // The time reported is until the answer is on screen, not only until it arrived:
  // measured once the browser has painted the rows (after the next frame).
  useEffect(() => {
    if (!run.result || run.shownMs !== null) return;
    let timer;
    const frame = requestAnimationFrame(() => {
      timer = setTimeout(() => setRun((r) => (r.result === run.result ? { ...r, shownMs: Math.round(performance.now() - r.started) } : r)));
    });
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  }, [run.result]);

  // Tab indents with two spaces unless Esc came just before: then Tab moves focus on,
  // as it would from any other field.
  const onKeyDown = (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') {
      e.preventDefault();
      execute();
      return;
    }
    if (e.key === 'Escape') {
      escaped.current = true;
      return;
    }
    if (e.key === 'Tab' && !e.shiftKey && !escaped.current) {
      e.preventDefault();
      insert('  ');
    }
    escaped.current = false;
  };

  // insert puts s at the cursor (replacing the selection) and keeps the cursor after it.
  const insert = (s) => {
    const el = area.current;
    const start = el.selectionStart ?? text.length;
    const end = el.selectionEnd ?? text.length;
    const next = el.value.slice(0, start) + s + el.value.slice(end);
    el.value = next;
    setText(next);
    el.focus();
    el.setSelectionRange(start + s.length, start + s.length);
  };

  const { result, error } = run;
  return (
    <Page
      title="SQL"
      wide
      actions={
        result && (
          <button type="button" class="secondary" onClick={() => downloadCSV('query.csv', result.columns, result.results)}>
            Download CSV
          </button>
        )
      }
    >
      <div class="sql-layout">
        <div class="sql-main">
          <Field
            label="HogQL query"
            name="query"
            error={error}
            hint="Ctrl+Enter (⌘+Enter) runs. Tab indents; press Esc, then Tab, to leave the editor."
          >
            <textarea
              ref={area}
              class="code sql-text"
              rows={10}
              spellcheck={false}
              value={text}
              onInput={(e) => setText(e.target.value)}
              onKeyDown={onKeyDown}
            />
          </Field>
          {error && /returns more than \d+ rows/.test(error.message) && (
            <p class="hint">hedge caps a query's answer at a number of rows (its --query-max-rows setting). Add a LIMIT, or aggregate with GROUP BY.</p>
          )}
          <div class="row">
            <button type="button" class="run-query" onClick={execute} disabled={!!run.running}>
              Run
            </button>
            {run.running && (
              <button type="button" class="secondary cancel-query" onClick={cancel}>
                Cancel
              </button>
            )}
            <p class="muted sql-status" role="status">
              {run.running ? 'Running…' : run.cancelled || (result ? rowsStatus(result.results.length, run.shownMs) : '')}
            </p>
          </div>
          <ErrorNote error={error} fields={['query']} />
          {result && !run.cancelled && <ResultTable key={run.started} result={result} />}
          <History history={history} onPick={(s) => { setText(s); area.current.focus(); }} />
        </div>
        <Schema project={project} onInsert={insert} />
      </div>
    </Page>
  );
}

// rowsStatus says how many rows came, and once they are on screen how long that took.
function rowsStatus(n, ms) {
  const rows = `${format(n)} ${n === 1 ? 'row' : 'rows'}`;
  return ms === null ? `${rows}.` : `${rows} in ${format(ms)} ms.`;
}

// stop has hedge cancel the project's query named id (its client_query_id).
function stop(project, id) {
  return api(`/api/projects/${project}/query/${encodeURIComponent(id)}/`, { method: 'DELETE' });
}

// ResultTable shows a HogQL answer, each column's name over its type, pageRows rows at
// a time. hasMore comes only with a query that named no LIMIT: hedge gave it PostHog's
// default LIMIT (the answer's limit, 100) and more rows matched. A query with a LIMIT
// of its own answers all its rows or is refused, so it never has more.
function ResultTable({ result }) {
  const { columns, types = [], results, hasMore, limit } = result;
  const [page, setPage] = useState(0);
  const pages = Math.max(1, Math.ceil(results.length / pageRows));
  const first = page * pageRows;
  const shown = results.slice(first, first + pageRows);
  return (
    <>
      {hasMore && (
        <p class="hint sql-more">
          Default limit of {format(limit ?? results.length)} rows reached: a query without a LIMIT answers its first rows only, as in PostHog. To
          see more, add a LIMIT of your own.
        </p>
      )}
      {pages > 1 && (
        <nav class="pager sql-pager" aria-label="Result pages">
          <button type="button" class="secondary" disabled={page === 0} onClick={() => setPage(0)}>
            First
          </button>
          <button type="button" class="secondary" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span class="muted" aria-live="polite">
            Rows {format(first + 1)}–{format(first + shown.length)} of {format(results.length)}
          </span>
          <button type="button" class="secondary" disabled={page === pages - 1} onClick={() => setPage(page + 1)}>
            Next
          </button>
          <button type="button" class="secondary" disabled={page === pages - 1} onClick={() => setPage(pages - 1)}>
            Last
          </button>
        </nav>
      )}
      {results.length === 0 ? (
        <p class="empty">The query returned no rows.</p>
      ) : (
        // It scrolls: focusable, so that the keyboard scrolls it too.
        <div class="table-wrap sql-result" tabIndex={0} role="region" aria-label="Query result">
          <table>
            <caption class="sr-only">Query result</caption>
            <thead>
              <tr>
                {columns.map((c, i) => (
                  <th scope="col">
                    {c} <span class="col-type">{types[i]}</span>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {shown.map((row) => (
                <tr>
                  {row.map((v) => (
                    <td class={typeof v === 'number' ? 'num' : undefined}>{format(v)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function History({ history, onPick }) {
  if (history.length === 0) return null;
  return (
    <section class="sql-history" aria-labelledby="sql-history-title">
      <h2 id="sql-history-title">Recent queries</h2>
      <p class="hint">Kept in this browser; choose one to put it back in the editor.</p>
      <ol>
        {history.map((s) => (
          <li>
            <button type="button" class="link code" onClick={() => onPick(s)}>
              {s.length > 160 ? s.slice(0, 160) + '…' : s}
            </button>
          </li>
        ))}
      </ol>
    </section>
  );
}

const tables = ['events', 'persons', 'groups'];

// Schema lists the tables' columns (from an empty SELECT *, which answers names and
// types) and the events' most used property keys of the last 30 days.
function Schema({ project, onInsert }) {
  const { data, error, loading } = useAsync(
    async (signal) => {
      const cols = await Promise.all(tables.map((t) => hogql(project, `SELECT * FROM ${t} LIMIT 0`, signal)));
      const keys = await hogql(
        project,
        'SELECT key, count() FROM (SELECT unnest(json_keys(properties)) AS key FROM events WHERE timestamp > now() - INTERVAL 30 DAY) GROUP BY key ORDER BY 2 DESC LIMIT 50',
        signal,
      );
      return { cols, keys: keys.results.map((r) => r[0]) };
    },
    [project],
  );
  return (
    <aside class="sql-schema" aria-labelledby="schema-title">
      <h2 id="schema-title">Schema</h2>
      <p class="hint">Choose a name to insert it at the cursor.</p>
      {loading && <Loading />}
      <ErrorNote error={error} />
      {data &&
        tables.map((t, i) => (
          <section>
            <h3>
              <button type="button" class="link" data-insert={t} onClick={() => onInsert(t)}>
                {t}
              </button>
            </h3>
            <ul>
              {data.cols[i].columns.map((c, j) => (
                <li>
                  <button type="button" class="link" data-insert={c} onClick={() => onInsert(c)}>
                    {c}
                  </button>{' '}
                  <span class="col-type">{data.cols[i].types[j]}</span>
                </li>
              ))}
            </ul>
          </section>
        ))}
      {data && data.keys.length > 0 && (
        <section>
          <h3>Event properties</h3>
          <ul>
            {data.keys.map((k) => (
              <li>
                <button type="button" class="link" data-insert={`properties.${k}`} onClick={() => onInsert(`properties.${k}`)}>
                  {k}
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
    </aside>
  );
}

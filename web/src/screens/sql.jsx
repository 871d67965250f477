// The SQL editor: HogQL over the project's events, persons and groups. Ctrl/Cmd+Enter
// runs; Tab indents, but Esc then Tab leaves the editor so the keyboard is never
// trapped. The last queries are kept in this browser, and a schema panel (read from
// hedge with HogQL) inserts table, column and property names at the cursor.
import { useRef, useState } from 'preact/hooks';
import { hogql } from '../api.js';
import { setQuery } from '../router.jsx';
import { ErrorNote, Field, Loading, Page, downloadCSV, format, useAsync } from '../ui.jsx';

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
  const [run, setRun] = useState({ result: null, error: null, running: false, ms: 0 });
  const [history, setHistory] = useState(() => readHistory(project));
  const area = useRef();
  const escaped = useRef(false);

  const execute = async () => {
    const sql = text.trim();
    if (!sql || run.running) return;
    setRun((r) => ({ ...r, running: true }));
    setQuery({ q: sql });
    setHistory(remember(project, sql));
    const started = performance.now();
    try {
      const result = await hogql(project, sql);
      setRun({ result, error: null, running: false, ms: Math.round(performance.now() - started) });
    } catch (error) {
      setRun({ result: null, error, running: false, ms: 0 });
    }
  };

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
            <button type="button" class="run-query" onClick={execute} disabled={run.running}>
              Run
            </button>
            <p class="muted sql-status" role="status">
              {run.running ? 'Running…' : result ? `${format(result.results.length)} ${result.results.length === 1 ? 'row' : 'rows'} in ${run.ms} ms.` : ''}
            </p>
          </div>
          <ErrorNote error={error} fields={['query']} />
          {result && <ResultTable result={result} />}
          <History history={history} onPick={(s) => { setText(s); area.current.focus(); }} />
        </div>
        <Schema project={project} onInsert={insert} />
      </div>
    </Page>
  );
}

// ResultTable shows a HogQL answer: each column's name over its type.
function ResultTable({ result }) {
  const { columns, types = [], results, hasMore } = result;
  return (
    <>
      {hasMore && <p class="hint">More rows matched than hedge returns (its --query-max-rows setting): add a LIMIT or aggregate to see them all.</p>}
      {results.length === 0 ? (
        <p class="empty">The query returned no rows.</p>
      ) : (
        <div class="table-wrap sql-result">
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
              {results.map((row) => (
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

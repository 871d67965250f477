// Persons: the project's persons, newest first, found by e-mail or distinct id. The
// search and the page are in the query string, so a search can be shared and reloaded.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Loading, Page, Pager, useAsync } from '../ui.jsx';
import { when } from './activity.jsx';
import { PeopleNav } from './groups.jsx';

const pageSize = 50;

export function Persons({ project, params }) {
  const search = params.get('search') || '';
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const [text, setText] = useState(search);
  const list = useAsync(
    (signal) => api(`/api/projects/${project}/persons/?${new URLSearchParams({ search, limit: pageSize, offset })}`, { signal }),
    [project, search, offset],
  );
  const page = list.data;
  return (
    <Page title="Persons">
      <PeopleNav project={project} current="persons" />
      <form
        class="row persons-search"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery({ search: text.trim(), offset: null });
        }}
      >
        <div class="field">
          <label for="persons-search">Search by e-mail or distinct ID</label>
          <input id="persons-search" type="search" value={text} onInput={(e) => setText(e.target.value)} />
        </div>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={list.error} />
      {!page ? (
        !list.error && <Loading label="Loading persons…" />
      ) : (
        <>
          <p class="muted" role="status">
            {page.count === 0
              ? search
                ? `No person matches “${search}”.`
                : 'No persons yet.'
              : `${offset + 1}–${offset + page.results.length} of ${page.count.toLocaleString('en-US')} ${page.count === 1 ? 'person' : 'persons'}`}
          </p>
          {page.results.length > 0 && <PersonTable project={project} persons={page.results} />}
          <Pager label="Pages of persons" page={page} offset={offset} pageSize={pageSize} />
        </>
      )}
    </Page>
  );
}

function PersonTable({ project, persons }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Person</th>
            <th scope="col">Distinct IDs</th>
            <th scope="col">First seen</th>
          </tr>
        </thead>
        <tbody>
          {persons.map((p) => (
            <tr key={p.uuid}>
              <td>
                <Link href={projectPath(project, `persons/${p.uuid}`)}>{p.name || p.uuid}</Link>
              </td>
              <td class="ids">
                {p.distinct_ids.slice(0, 3).join(', ')}
                {p.distinct_ids.length > 3 && <span class="muted"> and {p.distinct_ids.length - 3} more</span>}
              </td>
              <td>
                <time datetime={p.created_at}>{when(p.created_at)}</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

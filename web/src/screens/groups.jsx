// Groups: the project's groups of one type (companies, teams, ... as $groupidentify
// made them), found by key, and one group's properties. The types are tabs beside
// Persons.
import { useState } from 'preact/hooks';
import { api, hogql } from '../api.js';
import { Link, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Loading, Page, Pager, PagesStatus, Table, format, useAsync, usePages } from '../ui.jsx';
import { Properties, when } from './activity.jsx';

const pageSize = 50;

const typeName = (t) => t.name_plural || t.group_type;

// useGroupTypes is the project's group types (at most five).
function useGroupTypes(project) {
  return useAsync((signal) => api(`/api/projects/${project}/groups_types/`, { signal }), [project]);
}

// PeopleNav links Persons, Cohorts and each group type, as PostHog's People tabs.
export function PeopleNav({ project, current }) {
  const types = useGroupTypes(project).data || [];
  const links = [['persons', 'Persons'], ['cohorts', 'Cohorts'], ...types.map((t) => [`groups/${t.group_type_index}`, typeName(t)])];
  return (
    <nav class="people-nav" aria-label="Persons, cohorts and groups">
      {links.map(([slug, label]) => (
        <Link href={projectPath(project, slug)} aria-current={slug === current ? 'page' : undefined}>
          {label}
        </Link>
      ))}
    </nav>
  );
}

export function Groups({ project, type, params }) {
  const search = params.get('search') || '';
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const [text, setText] = useState(search);
  const types = useGroupTypes(project).data || [];
  const t = types.find((x) => String(x.group_type_index) === type);
  const list = useAsync(
    (signal) => api(`/api/projects/${project}/groups/?${new URLSearchParams({ group_type_index: type, search, limit: pageSize, offset })}`, { signal }),
    [project, type, search, offset],
  );
  const page = list.data;
  return (
    <Page title={t ? typeName(t) : 'Groups'}>
      <PeopleNav project={project} current={`groups/${type}`} />
      <form
        class="row persons-search"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery({ search: text.trim(), offset: null });
        }}
      >
        <div class="field">
          <label for="groups-search">Search by key</label>
          <input id="groups-search" type="search" value={text} onInput={(e) => setText(e.target.value)} />
        </div>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={list.error} />
      {!page ? (
        !list.error && <Loading label="Loading groups…" />
      ) : (
        <>
          <p class="muted" role="status">
            {page.count === 0 ? (search ? `No group matches “${search}”.` : 'No groups of this type yet.') : `${offset + 1}–${offset + page.results.length} of ${page.count.toLocaleString('en-US')}`}
          </p>
          {page.results.length > 0 && (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Group</th>
                    <th scope="col">Key</th>
                    <th scope="col">First seen</th>
                  </tr>
                </thead>
                <tbody>
                  {page.results.map((g) => (
                    <tr key={g.group_key}>
                      <td>
                        <Link href={projectPath(project, `groups/${type}/${encodeURIComponent(g.group_key)}`)}>{(g.group_properties && g.group_properties.name) || g.group_key}</Link>
                      </td>
                      <td class="ids">{g.group_key}</td>
                      <td>
                        <time datetime={g.created_at}>{when(g.created_at)}</time>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <Pager label="Pages of groups" page={page} offset={offset} pageSize={pageSize} />
        </>
      )}
    </Page>
  );
}

export function Group({ project, type, groupKey }) {
  const group = useAsync(
    (signal) => api(`/api/projects/${project}/groups/find/?${new URLSearchParams({ group_type_index: type, group_key: groupKey })}`, { signal }),
    [project, type, groupKey],
  );
  const g = group.data;
  return (
    <Page title={g ? (g.group_properties && g.group_properties.name) || g.group_key : 'Group'}>
      <p>
        <Link href={projectPath(project, `groups/${type}`)}>All groups of this type</Link>
      </p>
      <ErrorNote error={group.error} />
      {!g ? (
        !group.error && <Loading label="Loading the group…" />
      ) : (
        <section class="card person" aria-labelledby="group-props">
          <h2 id="group-props">Properties</h2>
          <p class="muted">
            Key <code>{g.group_key}</code> · first seen <time datetime={g.created_at}>{when(g.created_at)}</time>
          </p>
          <Properties title={`Properties of ${g.group_key}`} props={g.group_properties || {}} />
        </section>
      )}
      {g && <GroupEvents project={project} type={type} groupKey={g.group_key} />}
    </Page>
  );
}

// GroupEvents is the group's events over all time, newest first, a page at a time: the
// events whose $groups named it, kept in the column of its type. The key is a value of
// the query, bound by hedge, not part of its text.
function GroupEvents({ project, type, groupKey }) {
  const column = `"$group_${Number(type)}"`;
  const pages = usePages(async (offset, signal) => {
    const r = await hogql(
      project,
      `SELECT event, distinct_id, timestamp, properties.$current_url FROM events WHERE ${column} = {key}
        ORDER BY timestamp DESC, uuid DESC LIMIT ${pageSize + 1} OFFSET ${offset}`,
      signal,
      { key: groupKey },
    );
    return { rows: r.results.slice(0, pageSize), more: r.results.length > pageSize };
  }, [project, type, groupKey]);
  return (
    <section aria-labelledby="group-events">
      <h2 id="group-events">Events</h2>
      <ErrorNote error={pages.error} />
      {pages.rows && (
        <Table
          caption={`Events of ${groupKey}`}
          columns={[
            { key: 0, label: 'Event' },
            { key: 1, label: 'Distinct id' },
            { key: 2, label: 'Time', render: (r) => <time datetime={r[2]}>{when(r[2])}</time> },
            { key: 3, label: 'URL', render: (r) => format(r[3]) },
          ]}
          rows={pages.rows}
          empty="No events of this group yet."
        />
      )}
      <PagesStatus pages={pages} />
    </section>
  );
}

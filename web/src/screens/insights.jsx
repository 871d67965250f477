// The project's saved insights, searchable by name; the search is in the URL so a
// link reproduces the list. Each the user may edit has a Delete (soft, with Undo).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, Table, relativeTime, useAsync } from '../ui.jsx';
import { sourceOf } from '../query-source.js';
import { ListDeleted, deleteColumn, useListDelete } from './manage.jsx';

const named = (r) => r.name || 'Untitled insight';

const kinds = {
  TrendsQuery: 'Trends',
  FunnelsQuery: 'Funnel',
  RetentionQuery: 'Retention',
  PathsQuery: 'Paths',
  StickinessQuery: 'Stickiness',
  LifecycleQuery: 'Lifecycle',
  EventsQuery: 'Events',
  HogQLQuery: 'SQL',
  WebOverviewQuery: 'Web analytics',
  WebStatsTableQuery: 'Web analytics',
};

export function Insights({ project, params }) {
  const search = params.get('search') || '';
  const [typed, setTyped] = useState(search);
  // Searching waits for a pause in typing, so each key press is not a request.
  useEffect(() => {
    const t = setTimeout(() => setQuery({ search: typed.trim() || null }), 250);
    return () => clearTimeout(t);
  }, [typed]);
  // '/' focuses the search, as on PostHog's lists, unless the user is typing.
  useEffect(() => {
    const onKey = (e) => {
      if (e.key !== '/' || e.ctrlKey || e.metaKey || /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) return;
      e.preventDefault();
      document.getElementById('field-search').focus();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  const { data, error, loading, reload } = useAsync(
    (signal) => api(`/api/projects/${project}/insights/?limit=100&search=${encodeURIComponent(search)}`, { signal }),
    [project, search],
  );
  const list = useListDelete(`/api/projects/${project}/insights/`, reload);
  return (
    <Page
      title="Insights"
      actions={
        <Link class="button" href={projectPath(project, 'insights/new')}>
          New insight
        </Link>
      }
    >
      <div class="insights-search">
        <Field label="Search by name" name="search" hint="Press / anywhere on this page to search.">
          <input type="search" value={typed} onInput={(e) => setTyped(e.target.value)} />
        </Field>
      </div>
      <ErrorNote error={error} />
      <ListDeleted list={list} named={named} />
      {loading && !data ? (
        <Loading />
      ) : (
        data && (
          <>
            <p class="sr-only" role="status">
              {data.count ?? data.results.length} insights
            </p>
            <Table
              caption="Saved insights"
              rowKey={(r) => r.id}
              empty={search ? `No insight's name contains “${search}”.` : 'No saved insights yet. Build one with New insight.'}
              columns={[
                {
                  key: 'name',
                  label: 'Name',
                  render: (r) => <Link href={projectPath(project, `insights/${r.short_id}`)}>{named(r)}</Link>,
                },
                { key: 'kind', label: 'Type', render: (r) => kinds[(sourceOf(r.query) || {}).kind] || '—' },
                { key: 'last_modified_at', label: 'Last modified', render: (r) => relativeTime(r.last_modified_at) },
                deleteColumn(list, named),
              ]}
              rows={data.results}
            />
          </>
        )
      )}
    </Page>
  );
}

// A person: its properties, every distinct id it goes by (a merged person has several)
// and its whole event history, newest first, a page at a time.
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { Link } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Loading, Page, PagesStatus, useAsync, usePages } from '../ui.jsx';
import { EventTable, Properties, select, toEvent, when } from './activity.jsx';

const pageSize = 50;
const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function Person({ project, uuid }) {
  const person = useAsync((signal) => api(`/api/projects/${project}/persons/${encodeURIComponent(uuid)}/`, { signal }), [project, uuid]);
  const p = person.data;
  return (
    <Page title={p ? p.name || p.uuid : 'Person'}>
      <p>
        <Link href={projectPath(project, 'persons')}>All persons</Link>
      </p>
      <ErrorNote error={person.error} />
      {!p ? (
        !person.error && <Loading label="Loading the person…" />
      ) : (
        <div class="person">
          <section class="card" aria-labelledby="person-ids">
            <h2 id="person-ids">Distinct IDs</h2>
            <ul class="distinct-ids">
              {p.distinct_ids.map((id) => (
                <li>
                  <code>{id}</code>
                </li>
              ))}
            </ul>
            <p class="muted">
              First seen <time datetime={p.created_at}>{when(p.created_at)}</time>
              {p.is_identified ? ' · identified' : ' · anonymous'}
            </p>
          </section>
          <section class="card" aria-labelledby="person-props">
            <h2 id="person-props">Properties</h2>
            <Properties title={`Properties of ${p.name || p.uuid}`} props={p.properties || {}} />
          </section>
          <History project={project} uuid={p.uuid} />
        </div>
      )}
    </Page>
  );
}

// History is the person's events over all time, newest first. The person is matched by
// person_id, which the person_display_name column makes the current one (events sent
// under a distinct id before a merge belong to the merged person).
function History({ project, uuid }) {
  const [open, setOpen] = useState(() => new Set());
  const pages = usePages(async (offset, signal) => {
    if (!uuidShape.test(uuid)) throw new Error('This is not a person id.');
    const r = await query(
      project,
      { kind: 'EventsQuery', select, where: [`person_id = '${uuid}'`], after: 'all', orderBy: ['timestamp DESC', 'created_at DESC', 'uuid DESC'], limit: pageSize, offset },
      signal,
    );
    return { rows: r.results.map(toEvent), more: r.hasMore };
  }, [project, uuid]);
  const toggle = (id) =>
    setOpen((o) => {
      const n = new Set(o);
      n.has(id) ? n.delete(id) : n.add(id);
      return n;
    });
  return (
    <section aria-labelledby="person-events">
      <h2 id="person-events">Events</h2>
      <ErrorNote error={pages.error} />
      {pages.rows && <EventTable project={project} rows={pages.rows} open={open} toggle={toggle} showPerson={false} />}
      <PagesStatus pages={pages} />
    </section>
  );
}

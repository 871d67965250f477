// The project's dashboards: pinned first, then by name (hedge's order), each a link to
// its grid, and a new one made by name (it opens in edit mode). Each the user may edit
// has a Delete (soft, with Undo).
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link, navigate } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, Table, relativeTime, useAsync } from '../ui.jsx';
import { ListDeleted, deleteColumn, useListDelete } from './manage.jsx';

const named = (d) => d.name || 'Untitled dashboard';

export function Dashboards({ project }) {
  const list = useAsync((signal) => api(`/api/projects/${project}/dashboards/?limit=200`, { signal }), [project]);
  const deletes = useListDelete(`/api/projects/${project}/dashboards/`, list.reload);
  return (
    <Page title="Dashboards">
      <NewDashboard project={project} />
      <ErrorNote error={list.error} />
      <ListDeleted list={deletes} named={named} />
      {list.loading && !list.data ? (
        <Loading />
      ) : (
        list.data && (
          <Table
            caption="Dashboards of this project"
            rowKey={(d) => d.id}
            rows={list.data.results}
            empty="No dashboards yet: name one above."
            columns={[
              {
                key: 'name',
                label: 'Name',
                render: (d) => <Link href={projectPath(project, `dashboard/${d.id}`)}>{named(d)}</Link>,
              },
              { key: 'description', label: 'Description' },
              {
                key: 'flags',
                label: 'Status',
                render: (d) => [d.pinned && 'Pinned', d.is_shared && 'Shared', d.effective_privilege_level < 37 && 'View only'].filter(Boolean).join(', '),
              },
              { key: 'created_at', label: 'Created', render: (d) => relativeTime(d.created_at) },
              deleteColumn(deletes, named),
            ]}
          />
        )
      )}
    </Page>
  );
}

function NewDashboard({ project }) {
  const [name, setName] = useState('');
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    try {
      const d = await api(`/api/projects/${project}/dashboards/`, { method: 'POST', body: { name } });
      navigate(projectPath(project, `dashboard/${d.id}?edit=1`));
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form class="card row" onSubmit={submit} aria-label="New dashboard">
      <ErrorNote error={error} fields={['name']} />
      <Field label="Name" name="name" error={error}>
        <input value={name} onInput={(e) => setName(e.target.value)} required maxLength={400} />
      </Field>
      <button type="submit">New dashboard</button>
    </form>
  );
}

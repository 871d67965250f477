// Cohorts, as PostHog's People → Cohorts: the list (name, kind, persons, created; a
// Delete with Undo, PATCH {"deleted": true} as PostHog's), a cohort defined by person
// properties (groups of filters, all or any, and other cohorts), a static one from a
// CSV of distinct ids (more added by another upload), and the persons in each now.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { personOperators } from '../operators.js';
import { Link, navigate } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, Table, relativeTime, useAsync } from '../ui.jsx';
import { when } from './activity.jsx';
import { PeopleNav } from './groups.jsx';
import { ListDeleted, useListDelete, useRequest } from './manage.jsx';

const pageSize = 50;
const named = (c) => c.name || `Cohort ${c.id}`;
const kindOf = (c) => (c.is_static ? 'Static' : 'Dynamic');
const persons = (n) => (n === null || n === undefined ? '—' : `${n.toLocaleString('en-US')} ${n === 1 ? 'person' : 'persons'}`);

// useCohortNames answers the project's cohorts' names by id (as text: a filter's value
// may be either), for the screens that show a cohort filter.
export function useCohortNames(project) {
  const list = useAsync((signal) => api(`/api/projects/${project}/cohorts/?limit=1000`, { signal }), [project]);
  const names = {};
  for (const c of list.data?.results || []) names[String(c.id)] = named(c);
  return names;
}

// cohortName is how a screen names the cohort of id: its name when known.
export function cohortName(names, id) {
  return names && names[String(id)] ? `“${names[String(id)]}”` : String(id);
}

export function Cohorts({ project }) {
  const list = useAsync((signal) => api(`/api/projects/${project}/cohorts/?limit=200`, { signal }), [project]);
  const deletes = useListDelete(`/api/projects/${project}/cohorts/`, list.reload);
  return (
    <Page
      title="Cohorts"
      actions={
        <Link class="button" href={projectPath(project, 'cohorts/new')}>
          New cohort
        </Link>
      }
    >
      <PeopleNav project={project} current="cohorts" />
      <ErrorNote error={list.error} />
      <ListDeleted list={deletes} named={named} />
      {list.loading && !list.data ? (
        <Loading label="Loading cohorts…" />
      ) : (
        list.data && (
          <Table
            caption={`${list.data.count} ${list.data.count === 1 ? 'cohort' : 'cohorts'}`}
            rowKey={(c) => c.id}
            rows={list.data.results}
            empty="No cohorts yet: define one by person properties, or upload a CSV of distinct IDs."
            columns={[
              { label: 'Name', render: (c) => <Link href={projectPath(project, `cohorts/${c.id}`)}>{named(c)}</Link> },
              { label: 'Type', render: kindOf },
              { label: 'Persons', numeric: true, render: (c) => persons(c.count) },
              { label: 'Created', render: (c) => <time datetime={c.created_at}>{relativeTime(c.created_at)}</time> },
              {
                label: <span class="sr-only">Delete</span>,
                render: (c) => (
                  <button type="button" class="secondary small" disabled={deletes.busy} aria-label={`Delete ${named(c)}`} onClick={() => deletes.remove(c)}>
                    Delete
                  </button>
                ),
              },
            ]}
          />
        )
      )}
    </Page>
  );
}

const noValue = new Set(['is_set', 'is_not_set']);

const emptyFilter = () => ({ type: 'person', key: '', operator: 'exact', text: '' });
const emptyGroup = () => ({ type: 'AND', filters: [emptyFilter()] });
const newCohort = { filters: { properties: { type: 'OR', values: [{ type: 'AND', values: [{ type: 'person', key: '', operator: 'exact', value: '' }] }] } } };

// draftOf is the form's state of a cohort: its top group's type and its groups, each a
// list of filters (a filter at the top level becomes a group of its own).
function draftOf(c) {
  const top = c.filters?.properties || { type: 'OR', values: [] };
  const filterOf = (f) =>
    f.type === 'cohort'
      ? { type: 'cohort', operator: f.operator === 'not_in' ? 'not_in' : 'in', value: String(f.value ?? '') }
      : { type: 'person', key: f.key || '', operator: f.operator || 'exact', text: Array.isArray(f.value) ? f.value.join(', ') : String(f.value ?? '') };
  const groups = (top.values || []).map((v) =>
    v.values ? { type: v.type === 'OR' ? 'OR' : 'AND', filters: v.values.filter((f) => !f.values).map(filterOf) } : { type: 'AND', filters: [filterOf(v)] },
  );
  return { name: c.name || '', description: c.description || '', static: !!c.is_static, match: top.type === 'AND' ? 'AND' : 'OR', groups };
}

// filtersOf is PostHog's filters of a draft.
function filtersOf(d) {
  const valueOf = (f) => {
    if (noValue.has(f.operator)) return f.operator;
    if (f.operator === 'exact' || f.operator === 'is_not') return f.text.split(',').map((s) => s.trim()).filter(Boolean);
    return f.text;
  };
  return {
    properties: {
      type: d.match,
      values: d.groups.map((g) => ({
        type: g.type,
        values: g.filters.map((f) =>
          f.type === 'cohort'
            ? { type: 'cohort', key: 'id', operator: f.operator, value: Number(f.value) }
            : { type: 'person', key: f.key.trim(), operator: f.operator, value: valueOf(f) },
        ),
      })),
    },
  };
}

export function Cohort({ project, id }) {
  const loaded = useAsync(
    (signal) => (id ? api(`/api/projects/${project}/cohorts/${id}/`, { signal }) : Promise.resolve(newCohort)),
    [project, id],
  );
  const [saved, setSaved] = useState(null);
  const cohort = saved && String(saved.id) === String(id) ? saved : loaded.data;
  const del = useRequest();
  const [gone, setGone] = useState(false);
  if (loaded.error) {
    return (
      <Page title="Cohort">
        <ErrorNote error={loaded.error} />
      </Page>
    );
  }
  if (!cohort) return <Loading />;
  const path = `/api/projects/${project}/cohorts/${id}/`;
  if (gone) {
    return (
      <Page title={named(cohort)}>
        <div class="card deleted-note">
          <p role="status">
            <strong>{named(cohort)}</strong> deleted.
          </p>
          <div class="row">
            <button type="button" disabled={del.busy} onClick={() => del.run(async () => (await api(path, { method: 'PATCH', body: { deleted: false } }), setGone(false)))}>
              Undo
            </button>
            <Link href={projectPath(project, 'cohorts')}>All cohorts</Link>
          </div>
          <ErrorNote error={del.error} />
        </div>
      </Page>
    );
  }
  return (
    <Page
      title={id ? named(cohort) : 'New cohort'}
      actions={
        id && (
          <button type="button" class="secondary" disabled={del.busy} onClick={() => del.run(async () => (await api(path, { method: 'PATCH', body: { deleted: true } }), setGone(true)))}>
            Delete
          </button>
        )
      }
    >
      <PeopleNav project={project} current="cohorts" />
      <ErrorNote error={del.error} />
      {id && (
        <p class="muted" role="status">
          {kindOf(cohort)} cohort of {persons(cohort.count)}.
        </p>
      )}
      <CohortForm key={`${cohort.id || 'new'}:${cohort.version || 0}`} project={project} cohort={cohort} onSaved={setSaved} />
      {id && <CohortPersons project={project} id={id} version={`${cohort.version}:${cohort.count}`} />}
    </Page>
  );
}

function CohortForm({ project, cohort, onSaved }) {
  const isNew = !cohort.id;
  const [d, setD] = useState(() => draftOf(cohort));
  const [file, setFile] = useState(null);
  const [state, setState] = useState({ busy: false, error: null, done: '' });
  const update = (changes) => setD((x) => ({ ...x, ...changes }));
  const setGroup = (i, changes) => update({ groups: d.groups.map((g, j) => (j === i ? { ...g, ...changes } : g)) });
  const others = useAsync((signal) => api(`/api/projects/${project}/cohorts/?limit=1000`, { signal }), [project]).data?.results?.filter((c) => c.id !== cohort.id) || [];

  const submit = async (e) => {
    e.preventDefault();
    setState({ busy: true, error: null, done: '' });
    try {
      let body;
      if (d.static) {
        body = new FormData();
        body.set('name', d.name);
        body.set('description', d.description);
        body.set('is_static', 'true');
        if (file) body.set('csv', file);
      } else {
        body = { name: d.name, description: d.description, filters: filtersOf(d) };
      }
      const out = await api(isNew ? `/api/projects/${project}/cohorts/` : `/api/projects/${project}/cohorts/${cohort.id}/`, { method: isNew ? 'POST' : 'PATCH', body });
      setState({ busy: false, error: null, done: 'Saved.' });
      if (isNew) navigate(projectPath(project, `cohorts/${out.id}`));
      else onSaved(out);
    } catch (error) {
      setState({ busy: false, error, done: '' });
    }
  };

  return (
    <form class="card cohort-form" onSubmit={submit} aria-label={isNew ? 'New cohort' : 'Edit cohort'}>
      <ErrorNote error={state.error} fields={['name', 'description', 'csv']} />
      <div class="row">
        <Field label="Name" name="name" error={state.error}>
          <input value={d.name} onInput={(e) => update({ name: e.target.value })} required maxLength={400} />
        </Field>
        <Field label="Description" name="description" error={state.error}>
          <input value={d.description} onInput={(e) => update({ description: e.target.value })} />
        </Field>
      </div>
      {isNew && (
        <fieldset class="cohort-kind">
          <legend>Type</legend>
          <label>
            <input type="radio" name="kind" checked={!d.static} onChange={() => update({ static: false })} /> Dynamic: persons whose properties match
          </label>
          <label>
            <input type="radio" name="kind" checked={d.static} onChange={() => update({ static: true })} /> Static: a list of distinct IDs from a CSV file
          </label>
        </fieldset>
      )}
      {d.static ? (
        <Field
          label={isNew ? 'CSV file' : 'Add distinct IDs from a CSV file'}
          name="csv"
          error={state.error}
          hint="One distinct ID a row, in the first column; a first row “distinct_id” is a header. IDs not seen yet count once their person sends an event."
        >
          <input type="file" accept=".csv,text/csv" required={isNew} onChange={(e) => setFile(e.target.files[0] || null)} />
        </Field>
      ) : (
        <>
          <div class="row">
            <div class="field">
              <label for="cohort-match">Persons who match</label>
              <select id="cohort-match" value={d.match} onChange={(e) => update({ match: e.target.value })}>
                <option value="OR">any of the groups</option>
                <option value="AND">all of the groups</option>
              </select>
            </div>
          </div>
          {d.groups.map((g, i) => (
            <CohortGroup
              key={i}
              index={i}
              group={g}
              others={others}
              onChange={(changes) => setGroup(i, changes)}
              onRemove={() => update({ groups: d.groups.filter((_, j) => j !== i) })}
            />
          ))}
          {d.groups.length === 0 && <p class="muted">No groups: the cohort has no persons.</p>}
          <div class="row">
            <button type="button" class="secondary" onClick={() => update({ groups: [...d.groups, emptyGroup()] })}>
              Add group
            </button>
          </div>
        </>
      )}
      <div class="row">
        <button type="submit" disabled={state.busy}>
          {isNew ? 'Create cohort' : 'Save'}
        </button>
        <span role="status">{state.busy ? 'Saving…' : state.done}</span>
      </div>
    </form>
  );
}

// CohortGroup edits one group: all or any of its filters, each a person property
// filter or a cohort filter.
function CohortGroup({ index, group, others, onChange, onRemove }) {
  const n = index + 1;
  const setFilter = (j, changes) => onChange({ filters: group.filters.map((f, k) => (k === j ? { ...f, ...changes } : f)) });
  const removeFilter = (j) => onChange({ filters: group.filters.filter((_, k) => k !== j) });
  return (
    <fieldset class="condition">
      <legend>Group {n}</legend>
      <div class="row">
        <div class="field">
          <label for={`group-${index}-type`}>Match</label>
          <select id={`group-${index}-type`} value={group.type} onChange={(e) => onChange({ type: e.target.value })}>
            <option value="AND">all of these filters</option>
            <option value="OR">any of these filters</option>
          </select>
        </div>
        <button type="button" class="secondary" onClick={onRemove}>
          Remove group {n}
        </button>
      </div>
      {group.filters.map((f, j) => {
        const id = `group-${index}-${j}`;
        const remove = (
          <button type="button" class="secondary" aria-label={`Remove filter ${j + 1} of group ${n}`} onClick={() => removeFilter(j)}>
            Remove
          </button>
        );
        if (f.type === 'cohort') {
          return (
            <div class="row prop-row">
              <div class="field">
                <label for={`${id}-op`}>Persons</label>
                <select id={`${id}-op`} value={f.operator} onChange={(e) => setFilter(j, { operator: e.target.value })}>
                  <option value="in">in cohort</option>
                  <option value="not_in">not in cohort</option>
                </select>
              </div>
              <div class="field">
                <label for={`${id}-value`}>Cohort</label>
                <select id={`${id}-value`} value={f.value} onChange={(e) => setFilter(j, { value: e.target.value })}>
                  <option value="">Choose…</option>
                  {others.map((c) => (
                    <option value={String(c.id)}>{named(c)}</option>
                  ))}
                </select>
              </div>
              {remove}
            </div>
          );
        }
        return (
          <div class="row prop-row">
            <div class="field">
              <label for={`${id}-key`}>Person property</label>
              <input id={`${id}-key`} value={f.key} placeholder="email" spellcheck={false} onInput={(e) => setFilter(j, { key: e.target.value })} />
            </div>
            <div class="field">
              <label for={`${id}-op`}>Operator</label>
              <select id={`${id}-op`} value={f.operator} onChange={(e) => setFilter(j, { operator: e.target.value })}>
                {personOperators.map(([op, label]) => (
                  <option value={op}>{label}</option>
                ))}
              </select>
            </div>
            {!noValue.has(f.operator) && (
              <div class="field">
                <label for={`${id}-value`}>Value</label>
                <input id={`${id}-value`} value={f.text} onInput={(e) => setFilter(j, { text: e.target.value })} />
              </div>
            )}
            {remove}
          </div>
        );
      })}
      <div class="row">
        <button type="button" class="secondary" onClick={() => onChange({ filters: [...group.filters, emptyFilter()] })}>
          Add property filter
        </button>
        <button type="button" class="secondary" onClick={() => onChange({ filters: [...group.filters, { type: 'cohort', operator: 'in', value: '' }] })}>
          Add cohort filter
        </button>
      </div>
    </fieldset>
  );
}

// CohortPersons lists the persons in the cohort now, a page at a time.
function CohortPersons({ project, id, version }) {
  const [offset, setOffset] = useState(0);
  const list = useAsync((signal) => api(`/api/projects/${project}/cohorts/${id}/persons/?limit=${pageSize}&offset=${offset}`, { signal }), [project, id, offset, version]);
  const page = list.data;
  return (
    <section aria-labelledby="cohort-persons">
      <h2 id="cohort-persons">Persons</h2>
      <ErrorNote error={list.error} />
      {!page ? (
        !list.error && <Loading label="Loading persons…" />
      ) : (
        <>
          <Table
            caption={page.count === 0 ? undefined : `${offset + 1}–${offset + page.results.length} of ${persons(page.count)}`}
            rowKey={(p) => p.uuid}
            rows={page.results}
            empty="No persons in this cohort yet."
            columns={[
              { label: 'Person', render: (p) => <Link href={projectPath(project, `persons/${p.uuid}`)}>{p.name || p.uuid}</Link> },
              { label: 'Distinct IDs', render: (p) => p.distinct_ids.slice(0, 3).join(', ') },
              { label: 'First seen', render: (p) => <time datetime={p.created_at}>{when(p.created_at)}</time> },
            ]}
          />
          {(page.previous || page.next) && (
            <nav class="pager" aria-label="Pages of the cohort's persons">
              <button type="button" class="secondary" disabled={!page.previous} onClick={() => setOffset(Math.max(0, offset - pageSize))}>
                Previous
              </button>
              <button type="button" class="secondary" disabled={!page.next} onClick={() => setOffset(offset + pageSize)}>
                Next
              </button>
            </nav>
          )}
        </>
      )}
    </section>
  );
}

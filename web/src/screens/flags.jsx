// The project's feature flags: search by key or name, narrow to enabled or disabled
// and to boolean or multivariate flags (all kept in the query string), and switch a
// flag on or off from its row. Deleted flags are not listed (hedge leaves them out).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link, setQuery } from '../router.jsx';
import { projectPath } from '../session.jsx';
import { ErrorNote, Loading, Page, Table, relativeTime, useAsync } from '../ui.jsx';
import { cohortName, useCohortNames } from './cohorts.jsx';

const pageSize = 50;

export function FeatureFlags({ project, params }) {
  const search = params.get('search') || '';
  const active = params.get('active') || '';
  const type = params.get('type') || '';
  const offset = Number(params.get('offset')) || 0;
  const deleted = params.get('deleted');
  const searchBox = useRef();
  const [toggleError, setToggleError] = useState(null);
  const list = useAsync(
    (signal) => {
      const q = new URLSearchParams({ limit: pageSize, offset });
      if (search) q.set('search', search);
      if (active) q.set('active', active);
      if (type) q.set('type', type);
      return api(`/api/projects/${project}/feature_flags/?${q}`, { signal });
    },
    [project, search, active, type, offset],
  );
  useSlashFocus(searchBox);
  const cohorts = useCohortNames(project);

  // A filter change starts again at the first page.
  const filter = (changes) => setQuery({ ...changes, offset: null, deleted: null });
  const toggle = async (flag) => {
    try {
      await api(`/api/projects/${project}/feature_flags/${flag.id}/`, { method: 'PATCH', body: { active: !flag.active } });
      setToggleError(null);
      list.reload();
    } catch (error) {
      setToggleError(error);
    }
  };

  const count = list.data ? list.data.count : 0;
  return (
    <Page
      title="Feature flags"
      actions={
        <Link class="button" href={projectPath(project, 'feature_flags/new')}>
          New feature flag
        </Link>
      }
    >
      {deleted && <p role="status" class="flag-notice">Deleted the flag {deleted}.</p>}
      <form class="row flag-filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="flag-search">Search</label>
          <input
            id="flag-search"
            ref={searchBox}
            type="search"
            placeholder="Key or description ( / )"
            value={search}
            onInput={(e) => filter({ search: e.target.value })}
          />
        </div>
        <div class="field">
          <label for="flag-active">Status</label>
          <select id="flag-active" value={active} onChange={(e) => filter({ active: e.target.value })}>
            <option value="">Any</option>
            <option value="true">Enabled</option>
            <option value="false">Disabled</option>
          </select>
        </div>
        <div class="field">
          <label for="flag-type">Type</label>
          <select id="flag-type" value={type} onChange={(e) => filter({ type: e.target.value })}>
            <option value="">Any</option>
            <option value="boolean">Boolean</option>
            <option value="multivariant">Multivariate</option>
          </select>
        </div>
      </form>
      <ErrorNote error={toggleError || list.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : (
        list.data && (
          <>
            <Table
              caption={`${count} ${count === 1 ? 'flag' : 'flags'}`}
              rowKey={(f) => f.id}
              empty={search || active || type ? 'No flag matches these filters.' : 'No feature flags yet. Create one to roll a feature out.'}
              rows={list.data.results}
              columns={[
                {
                  label: 'Key',
                  render: (f) => (
                    <Link href={projectPath(project, `feature_flags/${f.id}`)}>
                      <code>{f.key}</code>
                    </Link>
                  ),
                },
                { label: 'Description', render: (f) => f.name || <span class="muted">—</span> },
                { label: 'Type', render: (f) => (isMultivariate(f.filters) ? 'Multivariate' : 'Boolean') },
                { label: 'Release', render: (f) => releaseSummary(f.filters, cohorts) },
                { label: 'Created', render: (f) => <time datetime={f.created_at}>{relativeTime(f.created_at)}</time> },
                { label: 'Enabled', render: (f) => <ActiveSwitch flag={f} onToggle={toggle} /> },
              ]}
            />
            <Pager offset={offset} count={count} />
          </>
        )
      )}
    </Page>
  );
}

// ActiveSwitch turns a flag on or off; its label names the flag for screen readers.
function ActiveSwitch({ flag, onToggle }) {
  const [busy, setBusy] = useState(false);
  return (
    <label class="switch">
      <input
        type="checkbox"
        role="switch"
        checked={flag.active}
        disabled={busy}
        onChange={async () => {
          setBusy(true);
          await onToggle(flag);
          setBusy(false);
        }}
      />
      <span class="sr-only">{flag.key} enabled</span>
      <span aria-hidden="true">{flag.active ? 'On' : 'Off'}</span>
    </label>
  );
}

function Pager({ offset, count }) {
  if (count <= pageSize) return null;
  return (
    <nav class="row pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={offset === 0} onClick={() => setQuery({ offset: Math.max(0, offset - pageSize) || null })}>
        Previous
      </button>
      <span>
        {offset + 1}–{Math.min(offset + pageSize, count)} of {count}
      </span>
      <button type="button" class="secondary" disabled={offset + pageSize >= count} onClick={() => setQuery({ offset: offset + pageSize })}>
        Next
      </button>
    </nav>
  );
}

// useSlashFocus focuses the screen's search on "/" typed outside a field (§3.4).
function useSlashFocus(ref) {
  useEffect(() => {
    const onKey = (e) => {
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target;
      if (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return;
      e.preventDefault();
      ref.current && ref.current.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

export function isMultivariate(filters) {
  return !!(filters && filters.multivariate && filters.multivariate.variants && filters.multivariate.variants.length);
}

// releaseSummary says whom a flag is released to, as PostHog's list does: one
// condition set as "N% of all users" or "N% of users matching ...", more as a count;
// cohorts by their names (cohorts, by id).
export function releaseSummary(filters, cohorts) {
  const groups = (filters && filters.groups) || [];
  if (groups.length === 0) return 'No one';
  if (groups.length > 1) return `${groups.length} condition sets`;
  const g = groups[0];
  const pct = g.rollout_percentage === null || g.rollout_percentage === undefined ? 100 : g.rollout_percentage;
  const who = filters.aggregation_group_type_index != null ? 'groups' : 'users';
  const props = g.properties || [];
  if (props.length === 0) return `${pct}% of all ${who}`;
  return `${pct}% of ${who} matching ${props.map((p) => describeFilter(p, cohorts)).join(' and ')}`;
}

// describeFilter says a property filter in words: email icontains @example.com, or
// in cohort “Pro users” (cohorts: names by id; the id when it is not known).
export function describeFilter(p, cohorts) {
  if (p.type === 'cohort') return `${p.operator === 'not_in' ? 'not in' : 'in'} cohort ${cohortName(cohorts, p.value)}`;
  const op = p.operator || 'exact';
  if (op === 'is_set' || op === 'is_not_set') return `${p.key} ${op === 'is_set' ? 'is set' : 'is not set'}`;
  const value = Array.isArray(p.value) ? p.value.join(' or ') : String(p.value);
  return `${p.key} ${op === 'exact' ? '=' : op === 'is_not' ? '≠' : op} ${value}`;
}

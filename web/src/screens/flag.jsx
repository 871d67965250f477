// One feature flag: create or edit its key, description, release conditions (property
// filters and a rollout percentage per condition set), variants with their rollout
// percentages and JSON payloads; switch it on or off, delete it (PostHog's soft delete,
// PATCH deleted: true) after a confirm dialog, and see how often SDKs read it: a chart
// of its $feature_flag_called events per day by the value they answered.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, keepDraft, query, takeDraft } from '../api.js';
import { TimeChart } from '../chart.jsx';
import { seriesLabel } from '../insight-result.jsx';
import { navigate, setQuery } from '../router.jsx';
import { projectPath, useSession } from '../session.jsx';
import { ErrorNote, Field, Loading, Page, format, useAsync } from '../ui.jsx';
import { personOperators } from '../operators.js';
import { cohortName, useCohortNames } from './cohorts.jsx';
import { isMultivariate } from './flags.jsx';

// operators are the person property operators the form offers (flags §8.9): those
// of cohorts, and dates.
const operators = [...personOperators, ['is_date_before', 'before date'], ['is_date_after', 'after date']];
const noValue = new Set(['is_set', 'is_not_set']);

const emptyFlag = { key: '', name: '', active: true, version: 0, filters: { groups: [{ properties: [], rollout_percentage: 100 }] } };

export function FeatureFlag({ project, id, params }) {
  const loaded = useAsync((signal) => (id ? api(`/api/projects/${project}/feature_flags/${id}/`, { signal }) : Promise.resolve(emptyFlag)), [project, id]);
  const [changed, setChanged] = useState(null);
  const flag = changed && changed.id === loaded.data?.id ? changed : loaded.data;
  if (loaded.error) {
    return (
      <Page title="Feature flag">
        <ErrorNote error={loaded.error} />
      </Page>
    );
  }
  if (!flag) return <Loading />;
  return (
    <Page title={id ? flag.key : 'New feature flag'} actions={id && <FlagActions project={project} flag={flag} onChange={setChanged} />}>
      {flag.deleted && <p class="flag-notice">This flag was deleted: SDKs no longer receive it. Restore it to use it again.</p>}
      {id && <FlagUsage project={project} flagKey={flag.key} range={params.get('range') || '-30d'} />}
      <FlagForm key={flag.id || 'new'} project={project} flag={flag} onSaved={setChanged} />
    </Page>
  );
}

// FlagActions switches the flag on or off and deletes or restores it.
function FlagActions({ project, flag, onChange }) {
  const [error, setError] = useState(null);
  const [confirming, setConfirming] = useState(false);
  const patch = async (body) => {
    try {
      const saved = await api(`/api/projects/${project}/feature_flags/${flag.id}/`, { method: 'PATCH', body });
      setError(null);
      return saved;
    } catch (e) {
      setError(e);
      return null;
    }
  };
  return (
    <>
      <span class={flag.active ? 'badge badge-on' : 'badge'} role="status">
        {flag.deleted ? 'Deleted' : flag.active ? 'Enabled' : 'Disabled'}
      </span>
      {flag.deleted ? (
        <button type="button" onClick={async () => onChange((await patch({ deleted: false })) || flag)}>
          Restore
        </button>
      ) : (
        <>
          <button type="button" class="secondary" onClick={async () => onChange((await patch({ active: !flag.active })) || flag)}>
            {flag.active ? 'Disable' : 'Enable'}
          </button>
          <button type="button" class="danger" onClick={() => setConfirming(true)}>
            Delete
          </button>
        </>
      )}
      {error && (
        <p class="field-error flag-action-error" role="alert">
          {error.message}
        </p>
      )}
      <ConfirmDelete
        open={confirming}
        flagKey={flag.key}
        onClose={() => setConfirming(false)}
        onConfirm={async () => {
          setConfirming(false);
          if (await patch({ deleted: true })) navigate(projectPath(project, 'feature_flags?deleted=' + encodeURIComponent(flag.key)));
        }}
      />
    </>
  );
}

// ConfirmDelete is a modal <dialog>: Esc or Cancel closes it, focus starts on Cancel.
function ConfirmDelete({ open, flagKey, onClose, onConfirm }) {
  const ref = useRef();
  useEffect(() => {
    const d = ref.current;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="delete-title" onClose={onClose}>
      <h2 id="delete-title">Delete {flagKey}?</h2>
      <p>SDKs stop receiving the flag at once; code that reads it gets false. The key becomes free for a new flag.</p>
      <div class="row">
        <button type="button" class="secondary" autofocus onClick={onClose}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={onConfirm}>
          Delete flag
        </button>
      </div>
    </dialog>
  );
}

// draftOf is the form's state of a flag: texts as typed, each condition set and filter
// keeping what the form does not edit (base) so a save sends it back unchanged.
function draftOf(flag) {
  const f = flag.filters || {};
  const payloads = f.payloads || {};
  const variants = isMultivariate(f)
    ? f.multivariate.variants.map((v) => ({ key: v.key, name: v.name || '', rollout: String(v.rollout_percentage), payload: payloads[v.key] || '' }))
    : [];
  return {
    key: flag.key,
    name: flag.name || '',
    active: flag.active,
    groups: (f.groups || []).map((g) => ({
      base: g,
      rollout: g.rollout_percentage === null || g.rollout_percentage === undefined ? '100' : String(g.rollout_percentage),
      variant: g.variant || '',
      properties: (g.properties || []).map((p) => ({ base: p, key: p.key, operator: p.operator || 'exact', text: valueText(p.value) })),
    })),
    multivariate: variants.length > 0,
    variants,
    truePayload: payloads.true || '',
  };
}

// isPerson: the form edits person property filters; cohort, group and flag filters
// are shown and kept as they are.
function isPerson(p) {
  return (p.base.type || 'person') === 'person';
}

function valueText(v) {
  if (v === null || v === undefined) return '';
  return Array.isArray(v) ? v.join(', ') : String(v);
}

// valueOf is a filter's value as PostHog's form sends it: a list for equals and does
// not equal (values separated by commas), the operator's name for is set / is not
// set, else the text (hedge wants text for contains, regex and comparisons).
function valueOf(p) {
  if (noValue.has(p.operator)) return p.operator;
  if (p.operator === 'exact' || p.operator === 'is_not') {
    return p.text.split(',').map((s) => s.trim()).filter(Boolean);
  }
  return p.text;
}

// filtersOf builds the flag's filters from the draft over the flag's own (what the form
// does not edit, such as a group aggregation, stays as it was).
function filtersOf(draft, original) {
  const payloads = {};
  if (draft.multivariate) {
    for (const v of draft.variants) if (v.payload.trim()) payloads[v.key] = v.payload;
  } else if (draft.truePayload.trim()) {
    payloads.true = draft.truePayload;
  }
  const variantKeys = draft.variants.map((v) => v.key);
  return {
    ...original,
    groups: draft.groups.map((g) => ({
      ...g.base,
      properties: g.properties.map((p) =>
        isPerson(p) ? { ...p.base, key: p.key.trim(), type: 'person', operator: p.operator, value: valueOf(p) } : p.base,
      ),
      rollout_percentage: g.rollout === '' ? null : Number(g.rollout),
      variant: draft.multivariate && variantKeys.includes(g.variant) ? g.variant : null,
    })),
    multivariate: draft.multivariate ? { variants: draft.variants.map((v) => ({ key: v.key.trim(), name: v.name, rollout_percentage: Number(v.rollout) })) } : null,
    payloads,
  };
}

// payloadErrors checks every payload is JSON before anything is sent; the answer maps
// a payload's input id to what is wrong with it.
function payloadErrors(draft) {
  const errors = {};
  const check = (id, text) => {
    if (!text.trim()) return;
    try {
      JSON.parse(text);
    } catch (e) {
      errors[id] = `Not valid JSON: ${e.message}`;
    }
  };
  if (draft.multivariate) draft.variants.forEach((v, i) => check(`payload-${i}`, v.payload));
  else check('payload-true', draft.truePayload);
  return errors;
}

// filtersPart is where the form shows an error of the API about filters: hedge, like
// PostHog, names every such error attr "filters", and its words say which part it is.
function filtersPart(error, multivariate) {
  if (!error || error.attr !== 'filters') return null;
  if (/payload/i.test(error.message)) return multivariate ? 'variants' : 'payload';
  if (/variant/i.test(error.message)) return 'variants';
  return 'conditions';
}

// FlagForm edits a flag. When the session ends while it holds unsaved input, the input
// is kept (keepDraft) and comes back here after sign-in, with a note saying so; a draft
// of an older version of the flag is sent with that version, so hedge refuses it if
// the flag changed meanwhile instead of overwriting the change.
function FlagForm({ project, flag, onSaved }) {
  const { me } = useSession();
  const draftKey = `flag:${me.id}:${project}:${flag.id || 'new'}`;
  const cohorts = useCohortNames(project);
  const [restored] = useState(() => takeDraft(draftKey));
  const [draft, setDraft] = useState(() => (restored ? restored.draft : draftOf(flag)));
  // The restored draft's version until it is saved, then the flag's own.
  const [draftVersion, setDraftVersion] = useState(restored ? restored.version : null);
  const version = draftVersion ?? flag.version;
  const draftRef = useRef(draft);
  draftRef.current = draft;
  useEffect(() => {
    const pristine = JSON.stringify(draftOf(flag));
    return keepDraft(draftKey, () => (JSON.stringify(draftRef.current) === pristine ? null : { version, draft: draftRef.current }));
  }, [draftKey, flag, version]);
  const [state, setState] = useState({ error: null, saved: false, busy: false });
  const [jsonErrors, setJsonErrors] = useState({});
  const isNew = !flag.id;
  const update = (changes) => setDraft((d) => ({ ...d, ...changes }));
  const setGroup = (i, changes) => update({ groups: draft.groups.map((g, j) => (j === i ? { ...g, ...changes } : g)) });
  const part = filtersPart(state.error, draft.multivariate);

  const submit = async (e) => {
    e.preventDefault();
    const bad = payloadErrors(draft);
    setJsonErrors(bad);
    const first = Object.keys(bad)[0];
    if (first) {
      document.getElementById(first).focus();
      setState({ error: null, saved: false, busy: false });
      return;
    }
    const body = { key: draft.key.trim(), name: draft.name, filters: filtersOf(draft, flag.filters) };
    setState({ error: null, saved: false, busy: true });
    try {
      if (isNew) {
        const created = await api(`/api/projects/${project}/feature_flags/`, { method: 'POST', body: { ...body, active: draft.active } });
        navigate(projectPath(project, `feature_flags/${created.id}`));
        return;
      }
      const saved = await api(`/api/projects/${project}/feature_flags/${flag.id}/`, { method: 'PATCH', body: { ...body, version } });
      setState({ error: null, saved: true, busy: false });
      setDraftVersion(null);
      onSaved(saved);
    } catch (error) {
      setState({ error, saved: false, busy: false });
    }
  };

  return (
    <form class="flag-form" onSubmit={submit} noValidate aria-label={isNew ? 'New feature flag' : `Edit ${flag.key}`}>
      {restored && !state.saved && (
        <p class="draft-note" role="status">
          Your unsaved changes were kept while you signed in again. Check them and save.
        </p>
      )}
      <ErrorNote error={state.error} fields={['key', 'name', 'filters']} />
      <section class="card" aria-labelledby="flag-basics">
        <h2 id="flag-basics">Flag</h2>
        <Field label="Key" name="key" error={state.error} hint="What code asks for: letters, digits, - and _.">
          <input value={draft.key} required autocomplete="off" spellcheck={false} onInput={(e) => update({ key: e.target.value })} />
        </Field>
        <Field label="Description" name="name" error={state.error}>
          <input value={draft.name} onInput={(e) => update({ name: e.target.value })} />
        </Field>
        {isNew && (
          <label class="check">
            <input type="checkbox" checked={draft.active} onChange={(e) => update({ active: e.target.checked })} /> Enabled when created
          </label>
        )}
      </section>

      <section class="card" aria-labelledby="flag-conditions">
        <h2 id="flag-conditions">Release conditions</h2>
        <p class="muted">A user gets the flag when they match any condition set and fall in its rollout percentage.</p>
        {part === 'conditions' && <InlineError id="conditions-error" message={state.error.message} />}
        {draft.groups.map((g, i) => (
          <ConditionSet
            index={i}
            group={g}
            variants={draft.multivariate ? draft.variants : null}
            cohorts={cohorts}
            onChange={(changes) => setGroup(i, changes)}
            onRemove={draft.groups.length > 1 ? () => update({ groups: draft.groups.filter((_, j) => j !== i) }) : null}
          />
        ))}
        <button type="button" class="secondary" onClick={() => update({ groups: [...draft.groups, { base: {}, rollout: '100', variant: '', properties: [] }] })}>
          Add condition set
        </button>
      </section>

      <Variants draft={draft} update={update} jsonErrors={jsonErrors} apiError={part === 'variants' ? state.error.message : null} />

      {!draft.multivariate && (
        <section class="card" aria-labelledby="flag-payload">
          <h2 id="flag-payload">Payload</h2>
          <PayloadInput
            id="payload-true"
            label="Payload when the flag is on (JSON)"
            value={draft.truePayload}
            error={jsonErrors['payload-true'] || (part === 'payload' ? state.error.message : null)}
            onInput={(v) => update({ truePayload: v })}
          />
        </section>
      )}

      <div class="row flag-submit">
        <button type="submit" disabled={state.busy}>
          {isNew ? 'Create flag' : 'Save changes'}
        </button>
        <span role="status">{state.busy ? 'Saving…' : state.saved ? 'Saved.' : ''}</span>
      </div>
    </form>
  );
}

function InlineError({ id, message }) {
  return (
    <p id={id} class="field-error" role="alert">
      {message}
    </p>
  );
}

// ConditionSet edits one condition set: its property filters, rollout percentage and,
// for a multivariate flag, the variant it forces.
function ConditionSet({ index, group, variants, cohorts, onChange, onRemove }) {
  const n = index + 1;
  const setProp = (j, changes) => onChange({ properties: group.properties.map((p, k) => (k === j ? { ...p, ...changes } : p)) });
  return (
    <fieldset class="condition">
      <legend>Condition set {n}</legend>
      {group.properties.length === 0 && <p class="muted">Matches every user.</p>}
      {group.properties.map((p, j) => {
        const id = `cond-${index}-${j}`;
        return isPerson(p) ? (
          <div class="row prop-row">
            <div class="field">
              <label for={`${id}-key`}>Property</label>
              <input id={`${id}-key`} value={p.key} placeholder="email" spellcheck={false} onInput={(e) => setProp(j, { key: e.target.value })} />
            </div>
            <div class="field">
              <label for={`${id}-op`}>Operator</label>
              <select id={`${id}-op`} value={p.operator} onChange={(e) => setProp(j, { operator: e.target.value })}>
                {operators.map(([op, label]) => (
                  <option value={op}>{label}</option>
                ))}
              </select>
            </div>
            {!noValue.has(p.operator) && (
              <div class="field">
                <label for={`${id}-value`}>Value</label>
                <input
                  id={`${id}-value`}
                  value={p.text}
                  aria-describedby={p.operator === 'exact' || p.operator === 'is_not' ? `${id}-hint` : undefined}
                  onInput={(e) => setProp(j, { text: e.target.value })}
                />
                {(p.operator === 'exact' || p.operator === 'is_not') && (
                  <small id={`${id}-hint`} class="hint">
                    Separate several values with commas.
                  </small>
                )}
              </div>
            )}
            <button type="button" class="secondary" aria-label={`Remove filter ${j + 1} of condition set ${n}`} onClick={() => onChange({ properties: group.properties.filter((_, k) => k !== j) })}>
              Remove
            </button>
          </div>
        ) : p.base.type === 'cohort' ? (
          <div class="row prop-row">
            <div class="field">
              <label for={`${id}-op`}>Persons</label>
              <select id={`${id}-op`} value={p.base.operator === 'not_in' ? 'not_in' : 'in'} onChange={(e) => setProp(j, { base: { ...p.base, operator: e.target.value } })}>
                <option value="in">in cohort</option>
                <option value="not_in">not in cohort</option>
              </select>
            </div>
            <div class="field">
              <label for={`${id}-value`}>Cohort</label>
              <select id={`${id}-value`} value={String(p.base.value ?? '')} onChange={(e) => setProp(j, { base: { ...p.base, value: Number(e.target.value) } })}>
                {!cohorts[String(p.base.value)] && <option value={String(p.base.value ?? '')}>{p.base.value ? `Cohort ${cohortName(cohorts, p.base.value)}` : 'Choose…'}</option>}
                {Object.entries(cohorts).map(([cid, name]) => (
                  <option value={cid}>{name}</option>
                ))}
              </select>
            </div>
            <button type="button" class="secondary" aria-label={`Remove filter ${j + 1} of condition set ${n}`} onClick={() => onChange({ properties: group.properties.filter((_, k) => k !== j) })}>
              Remove
            </button>
          </div>
        ) : (
          <p class="row prop-row">
            <span>
              {p.base.type} filter <code>{p.key}</code> {p.operator} <code>{valueText(p.base.value)}</code> (kept as it is)
            </span>
            <button type="button" class="secondary" aria-label={`Remove filter ${j + 1} of condition set ${n}`} onClick={() => onChange({ properties: group.properties.filter((_, k) => k !== j) })}>
              Remove
            </button>
          </p>
        );
      })}
      <div class="row">
        <button type="button" class="secondary" onClick={() => onChange({ properties: [...group.properties, { base: { type: 'person' }, key: '', operator: 'exact', text: '' }] })}>
          Add property filter
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => onChange({ properties: [...group.properties, { base: { type: 'cohort', key: 'id', operator: 'in', value: null }, key: 'id', operator: 'in', text: '' }] })}
        >
          Add cohort filter
        </button>
      </div>
      <div class="row">
        <div class="field">
          <label for={`cond-${index}-rollout`}>Rollout percentage</label>
          <span class="pct">
            <input id={`cond-${index}-rollout`} type="number" min="0" max="100" step="any" value={group.rollout} onInput={(e) => onChange({ rollout: e.target.value })} />%
          </span>
        </div>
        {variants && (
          <div class="field">
            <label for={`cond-${index}-variant`}>Variant</label>
            <select id={`cond-${index}-variant`} value={group.variant} onChange={(e) => onChange({ variant: e.target.value })}>
              <option value="">By rollout percentages</option>
              {variants.map((v) => (
                <option value={v.key}>{v.key}</option>
              ))}
            </select>
          </div>
        )}
        {onRemove && (
          <button type="button" class="secondary" onClick={onRemove}>
            Remove condition set {n}
          </button>
        )}
      </div>
    </fieldset>
  );
}

// Variants turns the flag multivariate and edits its variants: key, description,
// rollout percentage and payload each. The sum is shown as it is typed; the API
// refuses a sum other than 100, and its error is shown here.
function Variants({ draft, update, jsonErrors, apiError }) {
  const sum = draft.variants.reduce((a, v) => a + (Number(v.rollout) || 0), 0);
  const setVariant = (i, changes) => update({ variants: draft.variants.map((v, j) => (j === i ? { ...v, ...changes } : v)) });
  const distribute = () => {
    const n = draft.variants.length;
    const each = Math.floor(100 / n);
    update({ variants: draft.variants.map((v, i) => ({ ...v, rollout: String(i === 0 ? 100 - each * (n - 1) : each) })) });
  };
  return (
    <section class="card" aria-labelledby="flag-variants">
      <h2 id="flag-variants">Variants</h2>
      <label class="check">
        <input
          id="flag-multivariate"
          type="checkbox"
          checked={draft.multivariate}
          onChange={(e) =>
            update({
              multivariate: e.target.checked,
              variants: e.target.checked && draft.variants.length === 0 ? [newVariant('control', 50), newVariant('test', 50)] : draft.variants,
            })
          }
        />{' '}
        Serve variants (multivariate flag)
      </label>
      {draft.multivariate && (
        <div id="variants" class="variants" aria-describedby={apiError ? 'variants-error' : undefined}>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Description</th>
                  <th scope="col" class="num">
                    Rollout
                  </th>
                  <th scope="col">Payload (JSON)</th>
                  <th scope="col">
                    <span class="sr-only">Remove</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {draft.variants.map((v, i) => (
                  <tr>
                    <td>
                      <input aria-label={`Variant ${i + 1} key`} id={`variant-${i}-key`} value={v.key} spellcheck={false} onInput={(e) => setVariant(i, { key: e.target.value })} />
                    </td>
                    <td>
                      <input aria-label={`Variant ${i + 1} description`} value={v.name} onInput={(e) => setVariant(i, { name: e.target.value })} />
                    </td>
                    <td class="num">
                      <span class="pct">
                        <input
                          aria-label={`Variant ${i + 1} rollout percentage`}
                          id={`variant-${i}-rollout`}
                          type="number"
                          min="0"
                          max="100"
                          step="any"
                          value={v.rollout}
                          aria-invalid={apiError && sum !== 100 ? 'true' : undefined}
                          onInput={(e) => setVariant(i, { rollout: e.target.value })}
                        />
                        %
                      </span>
                    </td>
                    <td>
                      <PayloadInput id={`payload-${i}`} label={`Variant ${i + 1} payload`} hideLabel value={v.payload} error={jsonErrors[`payload-${i}`]} onInput={(p) => setVariant(i, { payload: p })} />
                    </td>
                    <td>
                      <button type="button" class="secondary" disabled={draft.variants.length <= 1} onClick={() => update({ variants: draft.variants.filter((_, j) => j !== i) })}>
                        Remove<span class="sr-only"> variant {i + 1}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="row variant-tools">
            <p id="variant-sum" class={sum === 100 ? 'variant-sum' : 'variant-sum variant-sum-off'} aria-live="polite">
              Total: {format(sum)}%{sum !== 100 && ' (must be 100%)'}
            </p>
            <button type="button" class="secondary" onClick={() => update({ variants: [...draft.variants, newVariant(`variant-${draft.variants.length + 1}`, 0)] })}>
              Add variant
            </button>
            <button type="button" class="secondary" onClick={distribute}>
              Distribute equally
            </button>
          </div>
          {apiError && <InlineError id="variants-error" message={apiError} />}
        </div>
      )}
    </section>
  );
}

function newVariant(key, rollout) {
  return { key, name: '', rollout: String(rollout), payload: '' };
}

// PayloadInput is a JSON textarea whose error (invalid JSON, found before sending, or
// the API's) is tied to it.
function PayloadInput({ id, label, hideLabel, value, error, onInput }) {
  return (
    <div class={error ? 'field field-invalid' : 'field'}>
      <label for={id} class={hideLabel ? 'sr-only' : undefined}>
        {label}
      </label>
      <textarea
        id={id}
        class="code payload"
        rows={hideLabel ? 2 : 4}
        spellcheck={false}
        placeholder='{"color": "blue"}'
        value={value}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onInput={(e) => onInput(e.target.value)}
      />
      {error && (
        <small id={`${id}-error`} class="field-error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

const ranges = [
  ['-7d', 'Last 7 days'],
  ['-30d', 'Last 30 days'],
  ['-90d', 'Last 90 days'],
];

// FlagUsage charts the flag's $feature_flag_called events per day, one line per value
// the SDKs answered ($feature_flag_response: true, false or a variant).
function FlagUsage({ project, flagKey, range }) {
  const usage = useAsync(
    (signal) =>
      query(
        project,
        {
          kind: 'TrendsQuery',
          series: [{ event: '$feature_flag_called', name: '$feature_flag_called', math: 'total' }],
          interval: 'day',
          dateRange: { date_from: range },
          properties: [{ key: '$feature_flag', value: flagKey, operator: 'exact', type: 'event' }],
          breakdownFilter: { breakdown: '$feature_flag_response', breakdown_type: 'event' },
        },
        signal,
      ),
    [project, flagKey, range],
  );
  const lines = (usage.data && usage.data.results) || [];
  const total = lines.reduce((a, l) => a + (l.count || 0), 0);
  return (
    <section class="card flag-usage" aria-labelledby="flag-usage">
      <div class="row usage-head">
        <h2 id="flag-usage">Usage</h2>
        <div class="field">
          <label for="usage-range">Range</label>
          <select id="usage-range" value={range} onChange={(e) => setQuery({ range: e.target.value === '-30d' ? null : e.target.value })}>
            {ranges.map(([v, label]) => (
              <option value={v}>{label}</option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" onClick={usage.reload}>
          Refresh
        </button>
      </div>
      <p class="muted" role="status">
        {usage.loading
          ? 'Loading…'
          : usage.data && `${format(total)} ${total === 1 ? 'call' : 'calls'} of ${flagKey} (events $feature_flag_called) in the ${ranges.find((r) => r[0] === range)?.[1].toLowerCase() || 'range'}.`}
      </p>
      <ErrorNote error={usage.error} />
      {usage.data &&
        (total === 0 ? (
          <p class="empty">No SDK has read this flag in this range. SDKs send $feature_flag_called when code reads a flag.</p>
        ) : (
          <TimeChart title={`Calls of ${flagKey} per day`} labels={lines[0].days} series={lines.map((l) => ({ label: seriesLabel(l), data: l.data }))} height={220} />
        ))}
    </section>
  );
}

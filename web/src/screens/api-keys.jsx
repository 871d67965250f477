// Personal API keys, under the user's account as in PostHog: the list shows only each
// key's mask; a new key is shown once, right after it is made, with a copy button,
// and never again (hedge keeps only its hash).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { CopyButton, ErrorNote, Field, Loading, Table, relativeTime, useAsync } from '../ui.jsx';
import { ConfirmButton } from './confirm.jsx';

export function ApiKeys() {
  const list = useAsync((signal) => api('/api/personal_api_keys/', { signal }), []);
  const [created, setCreated] = useState(null);
  // /account#api-keys (the link from project settings) opens at this section.
  useEffect(() => {
    if (location.hash === '#api-keys') document.getElementById('api-keys').scrollIntoView();
  }, []);
  const columns = [
    { key: 'label', label: 'Label' },
    { key: 'mask_value', label: 'Key', render: (k) => <code class="key-mask">{k.mask_value}</code> },
    { key: 'scopes', label: 'Scopes', render: (k) => k.scopes.join(' ') },
    { key: 'created', label: 'Created', render: (k) => relativeTime(k.created_at) },
    { key: 'used', label: 'Last used', render: (k) => lastUsed(k.last_used_at) },
    {
      key: 'actions',
      label: 'Actions',
      render: (k) => (
        <ConfirmButton
          label="Delete"
          aria-label={`Delete the key ${k.label}`}
          title={`Delete the key “${k.label}”?`}
          confirmLabel="Delete key"
          onConfirm={async () => {
            await api(`/api/personal_api_keys/${k.id}/`, { method: 'DELETE' });
            list.reload();
          }}
        >
          <p>Scripts using it stop working at once.</p>
        </ConfirmButton>
      ),
    },
  ];
  return (
    <section class="card" id="api-keys" aria-labelledby="api-keys-title">
      <h2 id="api-keys-title">Personal API keys</h2>
      <p class="muted">For scripts and tools that call hedge's API as you. A key never does more than its scopes allow, nor more than you may.</p>
      <NewKey
        onCreated={(key) => {
          setCreated(key);
          list.reload();
        }}
      />
      <div role="status">
        {created && (
          <div class="new-key">
            <p>
              <strong>Copy the key “{created.label}” now:</strong> hedge shows it only this once.
            </p>
            <p class="invite-link">
              <code class="key-value">{created.value}</code> <CopyButton text={created.value} label="Copy key" />
            </p>
            <button type="button" class="secondary" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        )}
      </div>
      <ErrorNote error={list.error} />
      {list.data ? <Table columns={columns} rows={list.data} rowKey={(k) => k.id} empty="No keys yet." /> : !list.error && <Loading />}
    </section>
  );
}

// lastUsed says when a key last authenticated a request. hedge records it at most once
// an hour per key (as PostHog does), so a time under an hour old says only that.
function lastUsed(iso) {
  if (!iso) return 'never';
  return Date.now() - new Date(iso).getTime() < 3600e3 ? 'within the last hour' : relativeTime(iso);
}

function NewKey({ onCreated }) {
  const [label, setLabel] = useState('');
  const [scopes, setScopes] = useState('*');
  const [state, setState] = useState({ error: null, busy: false });
  const submit = async (e) => {
    e.preventDefault();
    setState({ error: null, busy: true });
    try {
      const key = await api('/api/personal_api_keys/', { method: 'POST', body: { label, scopes: scopes.split(/[\s,]+/).filter(Boolean) } });
      setLabel('');
      setState({ error: null, busy: false });
      onCreated(key);
    } catch (error) {
      setState({ error, busy: false });
    }
  };
  return (
    <form class="key-form" onSubmit={submit} aria-label="New personal API key">
      <ErrorNote error={state.error} fields={['label', 'scopes']} />
      <div class="row">
        <Field label="Label" name="label" error={state.error}>
          <input required maxLength={40} autocomplete="off" value={label} onInput={(e) => setLabel(e.target.value)} />
        </Field>
        <Field label="Scopes" name="scopes" error={state.error} hint="* for everything, or e.g. query:read project:read">
          <input autocomplete="off" value={scopes} onInput={(e) => setScopes(e.target.value)} />
        </Field>
        <button type="submit" disabled={state.busy}>
          Create key
        </button>
      </div>
    </form>
  );
}

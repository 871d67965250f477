// The organization's people: members (level, remove) and invites (make one, copy its
// link, cancel). hedge enforces who may do what; the page only hides controls that
// would certainly be refused (your own level, an owner, a level above yours).
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { CopyButton, ErrorNote, Field, Loading, Table, relativeTime, useAsync } from '../ui.jsx';
import { ConfirmButton } from './confirm.jsx';

const levels = [
  [1, 'Member'],
  [8, 'Admin'],
  [15, 'Owner'],
];
const levelName = (n) => (levels.find(([v]) => v === n) || [n, String(n)])[1];

export function Members({ org, me }) {
  const list = useAsync((signal) => api(`/api/organizations/${org.id}/members/?limit=200`, { signal }), [org.id]);
  const [error, setError] = useState(null);
  const mine = org.membership_level;
  const act = async (fn) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    }
    list.reload();
  };
  const editable = (m) => mine >= 8 && m.user.uuid !== me.uuid && m.level <= mine;
  const columns = [
    { key: 'name', label: 'Name', render: (m) => [m.user.first_name, m.user.last_name].filter(Boolean).join(' ') || '—' },
    { key: 'email', label: 'E-mail', render: (m) => m.user.email },
    {
      key: 'level',
      label: 'Level',
      render: (m) =>
        editable(m) ? (
          <label>
            <span class="sr-only">Level of {m.user.email}</span>
            <select
              value={m.level}
              onChange={(e) => act(() => api(`/api/organizations/${org.id}/members/${m.user.uuid}/`, { method: 'PATCH', body: { level: Number(e.target.value) } }))}
            >
              {levels
                .filter(([v]) => v <= mine)
                .map(([v, label]) => (
                  <option value={v}>{label}</option>
                ))}
            </select>
          </label>
        ) : (
          levelName(m.level) + (m.user.uuid === me.uuid ? ' (you)' : '')
        ),
    },
    { key: 'joined', label: 'Joined', render: (m) => relativeTime(m.joined_at) },
    {
      key: 'actions',
      label: 'Actions',
      render: (m) =>
        editable(m) && m.level < 15 ? (
          <ConfirmButton
            label="Remove"
            aria-label={`Remove ${m.user.email}`}
            title={`Remove ${m.user.email}?`}
            confirmLabel="Remove member"
            onConfirm={async () => {
              await api(`/api/organizations/${org.id}/members/${m.user.uuid}/`, { method: 'DELETE' });
              list.reload();
            }}
          >
            <p>They lose access to every project of {org.name}, and the invites they made are cancelled.</p>
          </ConfirmButton>
        ) : null,
    },
  ];
  return (
    <section class="card" aria-labelledby="members-title">
      <h2 id="members-title">Members of {org.name}</h2>
      <ErrorNote error={error || list.error} />
      {list.data ? <Table columns={columns} rows={list.data.results} rowKey={(m) => m.id} /> : !list.error && <Loading />}
    </section>
  );
}

// inviteLink is where an invite is accepted: the console's own sign-up page.
const inviteLink = (id) => `${location.origin}/signup/${id}`;

export function Invites({ org }) {
  const list = useAsync((signal) => api(`/api/organizations/${org.id}/invites/?limit=100`, { signal }), [org.id]);
  const mine = org.membership_level;
  const pending = list.data ? list.data.results.filter((i) => !i.is_expired) : [];
  const columns = [
    { key: 'target_email', label: 'E-mail' },
    { key: 'level', label: 'Level', render: (i) => levelName(i.level) },
    { key: 'created', label: 'Sent', render: (i) => relativeTime(i.created_at) },
    { key: 'link', label: 'Link', render: (i) => i.id && <CopyButton text={inviteLink(i.id)} label="Copy link" /> },
    {
      key: 'actions',
      label: 'Actions',
      render: (i) =>
        mine >= 8 && i.id ? (
          <ConfirmButton
            label="Cancel invite"
            aria-label={`Cancel invite to ${i.target_email}`}
            title={`Cancel the invite to ${i.target_email}?`}
            confirmLabel="Cancel invite"
            onConfirm={async () => {
              await api(`/api/organizations/${org.id}/invites/${i.id}/`, { method: 'DELETE' });
              list.reload();
            }}
          >
            <p>Its link stops working.</p>
          </ConfirmButton>
        ) : null,
    },
  ];
  return (
    <section class="card" aria-labelledby="invites-title">
      <h2 id="invites-title">Invites</h2>
      <InviteForm org={org} onInvited={list.reload} />
      <ErrorNote error={list.error} />
      <h3>Pending invites</h3>
      {list.data ? (
        <Table columns={columns} rows={pending} rowKey={(i) => i.id || i.target_email} empty="No pending invites." />
      ) : (
        !list.error && <Loading />
      )}
    </section>
  );
}

function InviteForm({ org, onInvited }) {
  const [email, setEmail] = useState('');
  const [level, setLevel] = useState(1);
  const [state, setState] = useState({ error: null, invite: null, busy: false });
  const submit = async (e) => {
    e.preventDefault();
    setState({ error: null, invite: null, busy: true });
    try {
      const invite = await api(`/api/organizations/${org.id}/invites/`, { method: 'POST', body: { target_email: email, level } });
      setState({ error: null, invite, busy: false });
      setEmail('');
      onInvited();
    } catch (error) {
      setState({ error, invite: null, busy: false });
    }
  };
  const { invite } = state;
  return (
    <form class="invite-form" onSubmit={submit} aria-label="Invite someone">
      <ErrorNote error={state.error} fields={['target_email', 'level']} />
      <div class="row">
        <Field label="E-mail" name="target_email" error={state.error}>
          <input type="email" required autocomplete="off" value={email} onInput={(e) => setEmail(e.target.value)} />
        </Field>
        <Field label="Level" name="level" error={state.error}>
          <select value={level} onChange={(e) => setLevel(Number(e.target.value))}>
            {levels
              .filter(([v]) => v <= org.membership_level)
              .map(([v, label]) => (
                <option value={v}>{label}</option>
              ))}
          </select>
        </Field>
        <button type="submit" disabled={state.busy}>
          Invite
        </button>
      </div>
      <div role="status">
        {invite && (
          <div class="invite-result">
            <p>
              {invite.emailing_attempt_made
                ? `An e-mail with the link went to ${invite.target_email}. You can also send it yourself:`
                : `hedge sends no e-mail (no SMTP server is set up). Send ${invite.target_email} this link; it works for 3 days:`}
            </p>
            <p class="invite-link">
              <code>{inviteLink(invite.id)}</code> <CopyButton text={inviteLink(invite.id)} label="Copy link" />
            </p>
          </div>
        )}
      </div>
    </form>
  );
}

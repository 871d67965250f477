// What the insight and dashboard screens share to duplicate and delete the one shown.
// A delete is soft (PATCH {"deleted": true}), so, as PostHog's "deleted" toast does,
// the screen that deleted it offers Undo in its place ({"deleted": false}) and a way
// back to the list, instead of asking first.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Link } from '../router.jsx';
import { ErrorNote, Page } from '../ui.jsx';

// useRequest runs one request at a time: busy while it runs, so its buttons are
// disabled and a double click does not delete or duplicate twice; a failure is kept
// for ErrorNote. run answers what send answers, or undefined when it failed.
export function useRequest() {
  const [state, setState] = useState({ busy: false, error: null });
  const run = async (send) => {
    setState({ busy: true, error: null });
    try {
      const out = await send();
      setState({ busy: false, error: null });
      return out;
    } catch (error) {
      setState({ busy: false, error });
      return undefined;
    }
  };
  return { ...state, run };
}

// Deleted stands in for a screen whose record was just deleted: what was deleted,
// Undo (undo restores it and throws when hedge refuses), and the link to the list.
export function Deleted({ title, name, undo, listHref, listLabel }) {
  const req = useRequest();
  return (
    <Page title={title}>
      <div class="card deleted-note">
        <p role="status">
          <strong>{name}</strong> deleted.
        </p>
        <div class="row">
          <button type="button" disabled={req.busy} onClick={() => req.run(undo)}>
            Undo
          </button>
          <Link href={listHref}>{listLabel}</Link>
        </div>
        <ErrorNote error={req.error} />
      </div>
    </Page>
  );
}

// useListDelete deletes rows of a list (insights or dashboards, under path, which ends
// in "/") and keeps the last one deleted, so the list can say so with Undo; reload
// fetches the list again after each change.
export function useListDelete(path, reload) {
  const req = useRequest();
  const [gone, setGone] = useState(null);
  const patch = (row, deleted) => api(`${path}${row.id}/`, { method: 'PATCH', body: { deleted } });
  const remove = (row) =>
    req.run(async () => {
      await patch(row, true);
      setGone(row);
      reload();
    });
  const undo = () =>
    req.run(async () => {
      await patch(gone, false);
      setGone(null);
      reload();
    });
  return { ...req, gone, remove, undo };
}

// deleteColumn is a list's column of Delete buttons, one a row the user may edit
// (effective_privilege_level 37); named says what a row is called.
export function deleteColumn(list, named) {
  return {
    key: 'delete',
    label: <span class="sr-only">Delete</span>,
    render: (r) =>
      r.effective_privilege_level >= 37 && (
        <button type="button" class="secondary small" disabled={list.busy} aria-label={`Delete ${named(r)}`} onClick={() => list.remove(r)}>
          Delete
        </button>
      ),
  };
}

// ListDeleted says which row was just deleted, with Undo, and any refusal.
export function ListDeleted({ list, named }) {
  return (
    <>
      <div class="dash-status" role="status">
        {list.gone && (
          <>
            {named(list.gone)} deleted.
            <button type="button" class="link" disabled={list.busy} onClick={list.undo}>
              Undo
            </button>
          </>
        )}
      </div>
      <ErrorNote error={list.error} />
    </>
  );
}

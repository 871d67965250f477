// ConfirmButton asks before an action that cannot be undone (remove a member, revoke a
// key, delete an export): a native modal <dialog>, so focus stays inside it, Esc
// cancels, and Cancel is focused first so Enter alone never destroys anything.
import { useRef, useState } from 'preact/hooks';
import { ErrorNote } from '../ui.jsx';

let dialogs = 0;

export function ConfirmButton({ label, title, confirmLabel, onConfirm, children, ...rest }) {
  const ref = useRef();
  const [id] = useState(() => `confirm-${++dialogs}`);
  const [state, setState] = useState({ busy: false, error: null });
  const close = () => {
    ref.current.close();
    setState({ busy: false, error: null });
  };
  const confirm = async () => {
    setState({ busy: true, error: null });
    try {
      await onConfirm();
      if (ref.current) close();
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  return (
    <>
      <button type="button" class="secondary" onClick={() => ref.current.showModal()} {...rest}>
        {label}
      </button>
      <dialog ref={ref} class="confirm" aria-labelledby={`${id}-title`} onClose={() => setState({ busy: false, error: null })}>
        <h2 id={`${id}-title`}>{title}</h2>
        {children}
        <ErrorNote error={state.error} />
        <div class="confirm-actions">
          <button type="button" class="secondary" autofocus onClick={close}>
            Cancel
          </button>
          <button type="button" class="danger" disabled={state.busy} onClick={confirm}>
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

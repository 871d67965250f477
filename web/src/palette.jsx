// Ctrl/Cmd+K opens a palette that jumps to a screen, a dashboard, an insight or a
// person by name; arrows choose, Enter goes, Escape closes. "/" focuses the screen's
// search field (the first search input in main), as in PostHog.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { screens } from './nav.js';
import { navigate } from './router.jsx';
import { projectPath } from './session.jsx';

export function CommandPalette({ project }) {
  const dialog = useRef();
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const onKey = (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setOpen(true);
      } else if (e.key === '/' && !e.ctrlKey && !e.metaKey && !isTyping(e.target)) {
        const search = document.querySelector('main input[type="search"]');
        if (search) {
          e.preventDefault();
          search.focus();
        }
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  useEffect(() => {
    if (open && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [open]);
  return (
    <dialog ref={dialog} class="palette" aria-label="Go to" onClose={() => setOpen(false)}>
      {open && <PaletteBody project={project} close={() => dialog.current.close()} />}
    </dialog>
  );
}

// isTyping: the key goes to a field, not to the page.
function isTyping(el) {
  return el && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

function PaletteBody({ project, close }) {
  const [text, setText] = useState('');
  const [named, setNamed] = useState([]); // dashboards and insights, loaded on open
  const [people, setPeople] = useState([]);
  const [active, setActive] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    Promise.all([
      api(`/api/projects/${project}/dashboards/?limit=200`, { signal: ctl.signal }),
      api(`/api/projects/${project}/insights/?limit=200&saved=true`, { signal: ctl.signal }),
    ]).then(
      ([d, i]) =>
        setNamed([
          ...d.results.map((x) => ({ kind: 'Dashboard', label: x.name || 'Untitled', href: projectPath(project, `dashboard/${x.id}`) })),
          ...i.results.map((x) => ({ kind: 'Insight', label: x.name || x.derived_name || 'Untitled', href: projectPath(project, `insights/${x.short_id}`) })),
        ]),
      () => {},
    );
    return () => ctl.abort();
  }, [project]);
  useEffect(() => {
    if (text.trim().length < 2) return setPeople([]);
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      api(`/api/projects/${project}/persons/?limit=5&search=${encodeURIComponent(text.trim())}`, { signal: ctl.signal }).then(
        (page) =>
          setPeople(
            page.results.map((p) => ({
              kind: 'Person',
              label: (p.properties && p.properties.email) || p.distinct_ids[0],
              href: projectPath(project, `persons/${p.uuid}`),
            })),
          ),
        () => {},
      );
    }, 200);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [text, project]);
  const needle = text.trim().toLowerCase();
  const items = [
    ...screens.map(([slug, label]) => ({ kind: 'Screen', label, href: projectPath(project, slug) })),
    { kind: 'Screen', label: 'Cohorts', href: projectPath(project, 'cohorts') },
    { kind: 'Screen', label: 'Your account', href: '/account' },
    ...named,
  ]
    .filter((i) => !needle || i.label.toLowerCase().includes(needle))
    .slice(0, 12)
    .concat(people);
  const go = (item) => {
    close();
    navigate(item.href);
  };
  const onKey = (e) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      const n = items.length;
      setActive((a) => (n ? (a + (e.key === 'ArrowDown' ? 1 : n - 1)) % n : 0));
    } else if (e.key === 'Enter' && items[active]) {
      e.preventDefault();
      go(items[active]);
    }
  };
  return (
    <div class="palette-body">
      <label for="palette-input" class="sr-only">
        Go to a screen, dashboard, insight or person
      </label>
      <input
        id="palette-input"
        type="text"
        role="combobox"
        aria-expanded="true"
        aria-controls="palette-list"
        aria-activedescendant={items[active] ? `palette-${active}` : undefined}
        placeholder="Go to…"
        autocomplete="off"
        autofocus
        value={text}
        onInput={(e) => {
          setText(e.target.value);
          setActive(0);
        }}
        onKeyDown={onKey}
      />
      <ul id="palette-list" role="listbox" aria-label="Results">
        {items.map((item, i) => (
          <li id={`palette-${i}`} role="option" aria-selected={i === active} onClick={() => go(item)} onMouseEnter={() => setActive(i)}>
            <span class="palette-kind">{item.kind}</span> {item.label}
          </li>
        ))}
        {items.length === 0 && <li class="muted">Nothing matches.</li>}
      </ul>
    </div>
  );
}

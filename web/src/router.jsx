// A small history router: the path and query string are the state a URL shares, so
// every screen can be linked to and reloaded.
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set();

// navigate moves to url (a path with an optional query) without a reload; replace
// keeps the history entry, for state changes that should not add a Back step.
export function navigate(url, { replace = false } = {}) {
  if (url === location.pathname + location.search) return;
  history[replace ? 'replaceState' : 'pushState'](null, '', url);
  for (const fn of listeners) fn();
}

addEventListener('popstate', () => {
  for (const fn of listeners) fn();
});

// useLocation re-renders its component when the URL changes.
export function useLocation() {
  const [, set] = useState(0);
  useEffect(() => {
    const fn = () => set((n) => n + 1);
    listeners.add(fn);
    return () => listeners.delete(fn);
  }, []);
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

// match returns the named parts of path under pattern ('/project/:project/sql'), or
// null when it does not match.
export function match(pattern, path) {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return null;
  const params = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

// setQuery changes the query string's keys (a null value removes one), replacing the
// history entry.
export function setQuery(changes) {
  const params = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === '') params.delete(k);
    else params.set(k, v);
  }
  const qs = params.toString();
  navigate(location.pathname + (qs ? '?' + qs : ''), { replace: true });
}

// Link is an <a> that navigates in place; modified clicks open as the browser would.
export function Link({ href, children, ...rest }) {
  const onClick = (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
    rest.onNavigate && rest.onNavigate();
  };
  const { onNavigate, ...props } = rest;
  return (
    <a href={href} onClick={onClick} {...props}>
      {children}
    </a>
  );
}

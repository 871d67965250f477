// Light and dark: prefers-color-scheme decides unless the user chose one, which is kept
// in this browser. Colours live in CSS custom properties; canvas charts read them when
// they draw, so they subscribe to onThemeChange and redraw.
const key = 'hedge-theme';
const media = matchMedia('(prefers-color-scheme: dark)');
const listeners = new Set();

// themeChoice is 'light', 'dark' or 'system'.
export function themeChoice() {
  const v = localStorage.getItem(key);
  return v === 'light' || v === 'dark' ? v : 'system';
}

// forced is a scheme set by the page, over the system and the user's choice.
let forced = null;

// forceTheme fixes the scheme ('light' or 'dark') without storing it, as a shared
// dashboard's ?theme= does; null gives the choice back.
export function forceTheme(scheme) {
  forced = scheme;
  apply();
}

// theme is the scheme in effect: 'light' or 'dark'.
export function theme() {
  if (forced) return forced;
  const c = themeChoice();
  return c === 'system' ? (media.matches ? 'dark' : 'light') : c;
}

function apply() {
  document.documentElement.dataset.theme = theme();
  for (const fn of listeners) fn();
}

export function setTheme(choice) {
  if (choice === 'system') localStorage.removeItem(key);
  else localStorage.setItem(key, choice);
  apply();
}

// onThemeChange calls fn whenever the scheme changes; it returns the unsubscribe.
export function onThemeChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// cssVar reads a colour or size of the current theme.
export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

media.addEventListener('change', apply);
apply();

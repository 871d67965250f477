// Who is signed in, and the project the URL names: loaded once per sign-in and shared
// by every screen through context.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

// Session is {me, projects, project, reload}: me is GET /api/users/@me/, projects the
// current organization's, project the one in the URL (its record).
export const Session = createContext(null);

export function useSession() {
  return useContext(Session);
}

// projectPath is the console path of a screen in the current project.
export function projectPath(project, rest = '') {
  return `/project/${project}${rest ? '/' + rest : ''}`;
}

// lazy makes a screen whose module is loaded the first time it is shown, so that the
// console's first load carries only what every visit needs (the shell, the session,
// the lists) and the builders, charts and editors come with the screens that use them.
// esbuild splits each such module, and what they share, into chunks of their own.
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote, Loading, Page } from './ui.jsx';

// lazy is a component showing the export name of the module load() imports, with
// Loading until it has come. A module that cannot be fetched (hedge was upgraded and
// its chunks renamed, or the network failed) says so, and is fetched again next time.
export function lazy(load, name) {
  let loaded = null;
  let pending = null;
  return function LazyScreen(props) {
    const [screen, setScreen] = useState(() => loaded);
    const [error, setError] = useState(null);
    useEffect(() => {
      if (screen) return;
      pending ||= load().then((m) => (loaded = m[name]));
      pending.then(
        (s) => setScreen(() => s),
        (e) => {
          pending = null;
          setError(new Error(`This screen could not be loaded (${e.message}): reload the page.`));
        },
      );
    }, []);
    if (error) {
      return (
        <Page title="Cannot load this screen">
          <ErrorNote error={error} />
        </Page>
      );
    }
    const Screen = screen;
    return Screen ? <Screen {...props} /> : <Loading />;
  };
}

// The dashboard's router: hash routes, one view at a time, each view returning its cleanup
// (timers, event streams, media).
import { fill, h } from './dom.js';
import { jobList, jobPage } from './jobs.js';
import { subtitlePreview } from './subtitles.js';
import { liveIndex, livePage } from './live.js';
import { sinksPage } from './sinks.js';
import { failedPage } from './failed.js';
import { searchPage } from './search.js';

const routes = [
  [/^#\/jobs\/([^/?]+)\/subtitles$/, (m, q) => subtitlePreview(decodeURIComponent(m[1]), q), 'jobs'],
  [/^#\/jobs\/([^/?]+)$/, (m, q) => jobPage(decodeURIComponent(m[1]), q), 'jobs'],
  [/^#\/search$/, (m, q) => searchPage(q), 'search'],
  [/^#\/jobs$/, (m, q) => jobList(q), 'jobs'],
  [/^#\/live\/([^/?]+)$/, (m) => livePage(decodeURIComponent(m[1])), 'live'],
  [/^#\/live$/, () => liveIndex(), 'live'],
  [/^#\/sinks$/, (m, q) => sinksPage(q), 'sinks'],
  [/^#\/failed$/, (m, q) => failedPage(q), 'failed'],
];

const main = document.getElementById('main');
let cleanup = null;
let firstRender = true;

function route() {
  // In-page anchors (the skip link without JavaScript) are not routes.
  if (location.hash && !location.hash.startsWith('#/') && cleanup) return;
  const hash = location.hash.startsWith('#/') ? location.hash : '#/jobs';
  const [path, query = ''] = hash.split('?');
  if (cleanup) { try { cleanup(); } catch (e) { console.error(e); } cleanup = null; }
  const q = new URLSearchParams(query);
  let found = null;
  for (const [re, view, nav] of routes) {
    const m = re.exec(path);
    if (m) { found = { m, view, nav }; break; }
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (found && a.dataset.nav === found.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!found) {
    fill(main, h('h1', { tabindex: '-1' }, 'Not found'), h('p', {}, 'No such page. ', h('a', { href: '#/jobs' }, 'Go to the jobs.')));
    document.title = 'Not found · scribehook';
    return;
  }
  fill(main);
  const view = found.view(found.m, q);
  cleanup = view.cleanup || null;
  fill(main, view.el);
  document.title = `${view.title} · scribehook`;
  // Move focus to the new page's heading when the route changes; a fresh load starts at the
  // top, where the skip link is.
  if (!firstRender) {
    const h1 = main.querySelector('h1');
    if (h1) { h1.setAttribute('tabindex', '-1'); h1.focus({ preventScroll: false }); }
  }
  firstRender = false;
}

// Drop ?from=login once the page has used it (api.js reads it on the first 401).
window.addEventListener('load', () => {
  setTimeout(() => {
    const u = new URL(location.href);
    if (u.searchParams.has('from')) {
      u.searchParams.delete('from');
      history.replaceState(null, '', u.pathname + u.search + u.hash);
    }
  }, 5000);
});
// The skip link moves focus to the content without touching the route in the address.
document.querySelector('.skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  main.focus();
  main.scrollIntoView();
});
window.addEventListener('hashchange', route);
if (!location.hash.startsWith('#/')) history.replaceState(null, '', '#/jobs');
route();

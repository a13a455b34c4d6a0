// Search: full-text search over every stored transcript (GET /v1/search), each hit a link to
// its job's page at that time.
import { APIError, get } from './api.js';
import { fill, fmtClock, h, marked, shortId, speakerName } from './dom.js';

const KEYS = ['q', 'kind', 'language', 'date', 'custom_metadata', 'translations', 'limit', 'offset'];

function stateFrom(q) {
  const s = {};
  for (const k of KEYS) s[k] = q.get(k) || '';
  s.offset = Math.max(0, Number(s.offset) || 0);
  return s;
}

function queryOf(state) {
  const q = new URLSearchParams();
  for (const k of KEYS) if (state[k]) q.set(k, String(state[k]));
  return q;
}

/** The job page's route at a hit's start: the page scrolls to that utterance and marks it. */
export function hitRoute(jobId, start) {
  return `#/jobs/${encodeURIComponent(jobId)}?t=${encodeURIComponent(String(start))}`;
}

export function searchPage(q) {
  const state = stateFrom(q);
  const input = h('input', {
    id: 'search-q', name: 'q', type: 'search', value: state.q, required: true, spellcheck: 'false',
    autocomplete: 'off', 'aria-describedby': 'search-hint',
  });
  const kind = h('select', { id: 'search-kind', name: 'kind' },
    h('option', { value: '' }, 'Any kind'),
    h('option', { value: 'pre-recorded', selected: state.kind === 'pre-recorded' }, 'pre-recorded'),
    h('option', { value: 'live', selected: state.kind === 'live' }, 'live'));
  const language = h('input', { id: 'search-language', name: 'language', type: 'text', value: state.language, size: 6, placeholder: 'en' });
  const date = h('input', { id: 'search-date', name: 'date', type: 'date', value: state.date });
  const meta = h('input', { id: 'search-meta', name: 'custom_metadata', type: 'text', value: state.custom_metadata, spellcheck: 'false', placeholder: '{"team": "captions"}' });
  const translations = h('input', { id: 'search-translations', name: 'translations', type: 'checkbox', value: 'true', checked: state.translations === 'true' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Search transcripts' },
    h('div', { class: 'field wide' }, h('label', { for: 'search-q' }, 'Words to find'), input,
      h('p', { id: 'search-hint', class: 'hint' }, 'Every word must match; "exact words" in quotes for a phrase; word* for a prefix.')),
    h('div', { class: 'field' }, h('label', { for: 'search-kind' }, 'Kind'), kind),
    h('div', { class: 'field' }, h('label', { for: 'search-language' }, 'Language'), language),
    h('div', { class: 'field' }, h('label', { for: 'search-date' }, 'Job created on'), date),
    h('div', { class: 'field' }, h('label', { for: 'search-meta' }, 'Custom metadata contains'), meta),
    h('label', { class: 'check' }, translations, ' Search translations too'),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, 'Search')));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const next = { ...state, offset: 0 };
    for (const el of [input, kind, language, date, meta]) next[el.name] = el.value.trim();
    next.translations = translations.checked ? 'true' : '';
    location.hash = `#/search?${queryOf(next)}`;
  });

  const problem = h('div', { role: 'alert' });
  const status = h('p', { class: 'muted', id: 'search-status', role: 'status' });
  const list = h('ol', { class: 'hits', id: 'search-results' });
  const prev = h('button', { type: 'button', class: 'quiet' }, '← Previous');
  const next = h('button', { type: 'button', class: 'quiet' }, 'Next →');
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of hits', hidden: true }, prev, next);
  const el = h('div', {}, h('h1', {}, 'Search transcripts'), form, problem, status, list, pager);
  const go = (offset) => { location.hash = `#/search?${queryOf({ ...state, offset })}`; };
  const limit = Number(state.limit) || 20;
  prev.addEventListener('click', () => go(Math.max(0, state.offset - limit)));
  next.addEventListener('click', () => go(state.offset + limit));

  function hitItem(hit) {
    const when = `${fmtClock(hit.start)} – ${fmtClock(hit.end)}`;
    return h('li', { dataset: { job: hit.job_id, start: String(hit.start) } },
      h('div', { class: 'hit-head' },
        h('a', { href: hitRoute(hit.job_id, hit.start), class: 'id' }, `${shortId(hit.job_id)} at ${when}`),
        h('span', { class: 'muted' }, ` · ${hit.kind}`, hit.language ? ` · ${hit.language}` : '',
          hit.translation ? ' · translation' : '')),
      h('p', { class: 'hit-text', lang: hit.language || undefined },
        hit.speaker !== undefined && hit.speaker !== null ? h('span', { class: `speaker spk-${hit.speaker % 4}` }, `${speakerName(hit.speaker)}: `) : null,
        h('span', { class: 'hit-words' }, marked(hit.highlight))));
  }

  async function run() {
    if (!state.q) { status.textContent = 'Type words to find in every stored transcript.'; return; }
    status.textContent = 'Searching…';
    try {
      const page = await get(`/v1/search?${queryOf(state)}`);
      const items = page.items || [];
      fill(list, items.map(hitItem));
      status.textContent = items.length
        ? `Hits ${state.offset + 1}–${state.offset + items.length}${page.next ? ', more follow' : ''}.`
        : 'No utterance matches.';
      pager.hidden = !(page.next || state.offset > 0);
      prev.disabled = state.offset === 0;
      next.disabled = !page.next;
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return;
      status.textContent = '';
      fill(problem, h('p', { class: 'notice error' }, e.message));
    }
  }
  run();
  return { el, title: state.q ? `Search: ${state.q}` : 'Search' };
}

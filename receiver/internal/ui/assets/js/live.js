// Live sessions: follows /v1/live/{id}/events with EventSource (the session cookie is what lets
// it in: EventSource cannot send headers). Partials update in place, finals are appended, the
// other messages form a timeline, and the nine categories are toggles. A Captions panel offers
// the session's signed caption links (the HLS playlist, the page for an OBS browser source).
import { APIError, apiURL, get, post } from './api.js';
import { announce, every, fill, fmtClock, h, shortId, speakerName, statusBadge, timeEl } from './dom.js';

export const CATEGORIES = [
  ['partial_transcripts', 'Partial transcripts'],
  ['final_transcripts', 'Final transcripts'],
  ['speech_events', 'Speech events'],
  ['pre_processing_events', 'Pre-processing'],
  ['realtime_processing_events', 'Realtime processing'],
  ['post_processing_events', 'Post-processing'],
  ['acknowledgments', 'Acknowledgments'],
  ['errors', 'Errors'],
  ['lifecycle_events', 'Lifecycle'],
];

// Event names of the stream are message types; EventSource needs each one named.
const TYPES = ['transcript', 'speech_start', 'speech_end', 'translation', 'named_entity_recognition',
  'sentiment_analysis', 'post_transcript', 'post_final_transcript', 'post_chapterization',
  'post_summarization', 'audio_chunk', 'stop_recording', 'start_session', 'start_recording',
  'end_recording', 'end_session', 'message'];

export function liveIndex() {
  const input = h('input', { id: 'session-id', name: 'session', type: 'text', required: true, spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'session-hint' });
  const form = h('form', { class: 'toolbar', id: 'follow-form' },
    h('div', { class: 'field' }, h('label', { for: 'session-id' }, 'Session id'), input,
      h('p', { class: 'hint', id: 'session-hint' }, 'The id the service gave the live session.')),
    h('button', { type: 'submit' }, 'Follow'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const id = input.value.trim();
    if (id) location.hash = `#/live/${encodeURIComponent(id)}`;
  });
  const recent = h('div', { id: 'recent-sessions' }, h('p', { class: 'muted' }, 'Loading…'));
  const el = h('div', {},
    h('h1', {}, 'Live sessions'),
    form,
    h('section', { 'aria-labelledby': 'h-recent' }, h('h2', { id: 'h-recent' }, 'Recent sessions'), recent));
  const load = async () => {
    try {
      const page = await get('/v1/jobs?kind=live&limit=20');
      const items = page.items || [];
      fill(recent, items.length ? h('ul', {}, items.map((j) => h('li', {},
        h('a', { href: `#/live/${encodeURIComponent(j.id)}`, class: 'id' }, j.id), ' ', statusBadge(j.status), ' ',
        h('span', { class: 'muted' }, 'created ', timeEl(j.created_at)))))
        : h('p', { class: 'muted' }, 'No live session has sent a callback here yet.'));
    } catch (e) {
      if (!(e instanceof APIError && e.status === 401)) fill(recent, h('p', { class: 'notice error' }, e.message));
    }
  };
  load();
  return { el, title: 'Live sessions', cleanup: every(2000, load) };
}

function categoriesOf(msg) {
  const cats = [msg.category];
  const err = msg.payload && msg.payload.error;
  if (err && msg.category !== 'errors') cats.push('errors');
  return cats;
}

function errorText(p) {
  const e = p && p.error;
  if (!e) return '';
  return typeof e === 'string' ? e : e.message || JSON.stringify(e);
}

/** One line describing a message that is not a transcript. */
function describe(msg) {
  const p = msg.payload || {};
  const d = p.data || {};
  const err = errorText(p);
  if (err) return `Failed: ${err}`;
  switch (msg.type) {
    case 'speech_start': return `Speech starts at ${fmtClock(d.time, 2)}${d.channel ? `, channel ${d.channel}` : ''}`;
    case 'speech_end': return `Speech ends at ${fmtClock(d.time, 2)}${d.channel ? `, channel ${d.channel}` : ''}`;
    case 'start_session': return 'Session started';
    case 'start_recording': return 'Recording started';
    case 'end_recording': return `Recording ended${d.recording_duration !== undefined ? ` after ${d.recording_duration.toFixed(1)} s` : ''}`;
    case 'end_session': return 'Session ended';
    case 'stop_recording': return `Stop acknowledged${d.recording_duration !== undefined ? `: ${d.recording_duration.toFixed(1)} s recorded, ${d.recording_left_to_process ?? 0} s left to process` : ''}`;
    case 'post_transcript': return `Transcript after the session: ${((d.utterances) || []).length} utterances`;
    case 'post_final_transcript': {
      const t = d.transcription || {};
      return `Final result: ${(t.utterances || []).length} utterances${d.metadata ? `, ${d.metadata.audio_duration} s of audio` : ''}`;
    }
    case 'post_summarization': return `Summary: ${typeof d.results === 'string' ? d.results : JSON.stringify(d.results)}`;
    case 'post_chapterization': return `Chapters: ${JSON.stringify(d.results).slice(0, 200)}`;
    case 'translation': return `Translation (${d.target_language}): ${(d.translated_utterance || {}).text || ''}`;
    case 'named_entity_recognition': return `Entities: ${JSON.stringify(d.results || d).slice(0, 200)}`;
    case 'sentiment_analysis': return `Sentiment: ${JSON.stringify(d.results || d).slice(0, 200)}`;
    case 'error': return `Error: ${JSON.stringify(d).slice(0, 200)}`;
    default: return JSON.stringify(d).slice(0, 200);
  }
}

/**
 * The Captions panel: signs the session's caption links (POST /v1/live/{id}/captions/url, the
 * cookie lets it in) and shows each in a read-only field with a Copy button. The links work
 * without signing in until they expire, so the panel says so.
 */
function captionsPanel(id) {
  const enc = encodeURIComponent(id);
  const body = h('div', { id: 'captions-links' }, h('p', { class: 'muted' }, 'Signing the links…'));
  const status = h('p', { class: 'hint', id: 'captions-copied', role: 'status' });
  const row = (fieldId, label, value, what) => {
    const input = h('input', { id: fieldId, type: 'text', readonly: true, value, spellcheck: 'false', autocomplete: 'off' });
    input.addEventListener('focus', () => input.select());
    const copy = h('button', { type: 'button', class: 'quiet', 'aria-label': `Copy the ${what}` }, 'Copy');
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(value);
        status.textContent = `Copied the ${what}.`;
      } catch {
        input.focus();
        input.select();
        status.textContent = 'The browser refused to copy: the link is selected, copy it with the keyboard.';
      }
      announce(status.textContent);
    });
    return h('div', { class: 'field' }, h('label', { for: fieldId }, label), h('div', { class: 'copy-row' }, input, copy));
  };
  (async () => {
    try {
      const u = await post(`/v1/live/${enc}/captions/url`);
      fill(body,
        row('captions-url', 'Playlist (HLS WebVTT subtitles, for a player)', u.url, 'playlist URL'),
        row('captions-page-url', 'Caption page (for an OBS browser source)', u.page_url, 'caption page URL'),
        h('p', { class: 'hint' }, 'Anyone holding a link reads this session\'s captions, without signing in, until ',
          timeEl(u.expires_at), '. ',
          h('a', { href: u.page_url, target: '_blank', rel: 'noopener noreferrer', id: 'captions-open' }, 'Open the caption page')),
        status);
    } catch (e) {
      if (!(e instanceof APIError && e.status === 401)) fill(body, h('p', { class: 'notice error' }, `Caption links: ${e.message}`));
    }
  })();
  return h('section', { 'aria-labelledby': 'h-captions', class: 'captions-panel' },
    h('h2', { id: 'h-captions' }, 'Captions'),
    h('p', { class: 'hint' }, 'The finals as live captions: a subtitle playlist a video player reads, and a page that shows the last lines large, over a transparent background.'),
    body);
}

export function livePage(id) {
  const enc = encodeURIComponent(id);
  const enabled = Object.fromEntries(CATEGORIES.map(([c]) => [c, true]));
  const counts = Object.fromEntries(CATEGORIES.map(([c]) => [c, 0]));
  const countEls = {};
  const state = h('p', { role: 'status', id: 'live-state' }, 'Connecting…');
  const toggles = h('fieldset', { class: 'cats', id: 'categories' }, h('legend', {}, 'Categories shown'),
    CATEGORIES.map(([c, label]) => {
      countEls[c] = h('span', { class: 'count' }, '(0)');
      const box = h('input', { type: 'checkbox', name: 'category', value: c, checked: true, id: `cat-${c}` });
      box.addEventListener('change', () => { enabled[c] = box.checked; applyFilter(); });
      return h('label', { class: 'check', for: `cat-${c}` }, box, ` ${label} `, countEls[c]);
    }));
  const finals = h('ol', { class: 'finals', id: 'finals', 'aria-label': 'Transcript' });
  const timeline = h('ol', { class: 'timeline', id: 'timeline', 'aria-label': 'Timeline' });
  const el = h('div', {},
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', {},
      h('li', {}, h('a', { href: '#/live' }, 'Live sessions')), h('li', { 'aria-current': 'page' }, shortId(id)))),
    h('h1', {}, 'Live session ', h('span', { class: 'id' }, id)),
    state,
    h('div', { class: 'links' }, h('a', { class: 'button quiet', href: `#/jobs/${enc}` }, 'Session record')),
    captionsPanel(id),
    toggles,
    h('div', { class: 'live-grid' },
      h('section', { 'aria-labelledby': 'h-transcript' }, h('h2', { id: 'h-transcript' }, 'Transcript'),
        h('p', { class: 'hint' }, 'Finals are appended; the partial of the utterance in progress, in italics, changes in place.'),
        finals),
      h('section', { 'aria-labelledby': 'h-timeline' }, h('h2', { id: 'h-timeline' }, 'Timeline'),
        h('p', { class: 'hint' }, 'Speech events, acknowledgments, lifecycle, processing events and errors, oldest first.'),
        timeline)));

  const partials = new Map(); // utterance id → li
  let lastSeq = 0;
  let received = 0;
  let ended = false;
  let lastAck = null; // the timeline item that gathers consecutive audio chunk acknowledgments

  function visible(node) {
    return node.dataset.cats.split(' ').some((c) => enabled[c]);
  }
  function applyFilter() {
    for (const node of el.querySelectorAll('[data-cats]')) node.hidden = !visible(node);
  }
  function tag(node, cats) {
    node.dataset.cats = cats.join(' ');
    node.hidden = !visible(node);
    return node;
  }
  function keepBottom(list, fn) {
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    fn();
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function onTranscript(msg, cats) {
    const d = (msg.payload && msg.payload.data) || {};
    const u = d.utterance || {};
    const who = u.speaker !== undefined && u.speaker !== null ? `${speakerName(u.speaker)}: ` : '';
    const text = `${who}${u.text || ''}`;
    let partial = partials.get(d.id);
    if (!d.is_final) {
      if (!partial) {
        partial = tag(h('li', { class: 'partial', dataset: { utterance: d.id || '' } }), cats);
        partials.set(d.id, partial);
        finals.appendChild(partial);
      }
      partial.textContent = `${text} …`;
      return;
    }
    if (partial) { partial.remove(); partials.delete(d.id); }
    const li = tag(h('li', { class: 'final', dataset: { utterance: d.id || '' } },
      h('span', { class: 'when' }, `${fmtClock(u.start)}–${fmtClock(u.end)} `), h('span', { lang: u.language || undefined }, text)), cats);
    const firstPartial = finals.querySelector('li.partial');
    finals.insertBefore(li, firstPartial);
  }

  function onOther(msg, cats) {
    const p = msg.payload || {};
    const clock = new Date(msg.created_at).toLocaleTimeString();
    if (msg.type === 'audio_chunk' && !errorText(p)) {
      const d = p.data || {};
      const upTo = Array.isArray(d.time_range) ? d.time_range[1] : null;
      if (lastAck && timeline.lastElementChild === lastAck) {
        lastAck.n += 1;
        lastAck.querySelector('.detail').textContent = `${lastAck.n} audio chunks acknowledged${upTo !== null ? `, up to ${fmtClock(upTo, 2)}` : ''}`;
        lastAck.querySelector('time').textContent = clock;
        return;
      }
      lastAck = tag(h('li', { dataset: { type: msg.type } },
        h('time', { datetime: msg.created_at }, clock),
        h('span', {}, h('span', { class: 'type' }, 'audio_chunk'), ' ', h('span', { class: 'detail' }, `1 audio chunk acknowledged${upTo !== null ? `, up to ${fmtClock(upTo, 2)}` : ''}`))), cats);
      lastAck.n = 1;
      timeline.appendChild(lastAck);
      return;
    }
    const bad = Boolean(errorText(p)) || msg.type === 'error';
    timeline.appendChild(tag(h('li', { dataset: { type: msg.type }, class: bad ? 'failed' : '' },
      h('time', { datetime: msg.created_at }, clock),
      h('span', {}, h('span', { class: 'type' }, msg.type), ' ', bad ? h('span', { class: 'badge bad' }, 'error') : null, ' ',
        h('span', { class: 'detail' }, describe(msg)))), cats));
  }

  function onEvent(ev) {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    if (msg.seq <= lastSeq) return;
    lastSeq = msg.seq;
    received += 1;
    const cats = categoriesOf(msg);
    for (const c of cats) if (c in counts) { counts[c] += 1; countEls[c].textContent = `(${counts[c]})`; }
    if (msg.type === 'transcript') keepBottom(finals, () => onTranscript(msg, cats));
    else keepBottom(timeline, () => onOther(msg, cats));
    if (msg.type === 'end_session') {
      ended = true;
      state.textContent = `Session ended · ${received} messages`;
      es.close();
    } else {
      state.textContent = `Following · ${received} messages`;
    }
  }

  const es = new EventSource(apiURL(`/v1/live/${enc}/events`));
  for (const t of TYPES) es.addEventListener(t, onEvent);
  es.addEventListener('error', async (ev) => {
    if (ev.data) { onEvent(ev); return; } // a message of type "error"
    if (ended) return;
    if (es.readyState === EventSource.CLOSED) {
      state.textContent = 'Disconnected.';
      try { await get(`/v1/live/${enc}/messages?limit=1`); } catch { /* a 401 sends the browser to sign in */ }
    } else {
      state.textContent = 'Connection lost; reconnecting…';
    }
  });
  es.addEventListener('open', () => { if (!ended) state.textContent = `Following · ${received} messages`; });

  return { el, title: `Live ${shortId(id)}`, cleanup: () => es.close() };
}

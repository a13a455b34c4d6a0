// Subtitle preview: the job's audio with its WebVTT track, the active cue highlighted as it
// plays, and a rule report computed in the browser from the same file.
import { APIError, apiURL, get, getText } from './api.js';
import { fill, fmtClock, h, shortId, webURL } from './dom.js';
import { PROFILES, checkCues, parseVTT } from './vtt.js';

const RULES = {
  cpl: 'Characters per line', lines: 'Lines per cue', cps: 'Reading speed', minDur: 'Too short', maxDur: 'Too long', overlap: 'Overlap',
};

/** The profile's limits, with the job's own subtitles_config over them, as the pipeline does. */
function limits(name, params) {
  const p = { ...PROFILES[name] };
  const c = params && params.subtitles_config;
  if (c) {
    if (c.maximum_characters_per_row) p.maxChars = c.maximum_characters_per_row;
    if (c.maximum_rows_per_caption) p.maxLines = c.maximum_rows_per_caption;
    if (c.minimum_duration) p.minDur = c.minimum_duration;
    if (c.maximum_duration) p.maxDur = c.maximum_duration;
  }
  return p;
}

/**
 * A cue's lines as the preview shows them, beside its voice: named speakers' cues repeat the
 * name as a label at the start of their text (for players that do not show voices), which the
 * voice already shows here. The rule report counts the lines as the file has them.
 */
function shownLines(c) {
  const label = c.voice ? `${c.voice}: ` : '';
  if (!label || !c.lines.length || !c.lines[0].startsWith(label)) return c.lines;
  return [c.lines[0].slice(label.length), ...c.lines.slice(1)];
}

export function subtitlePreview(id, q) {
  const enc = encodeURIComponent(id);
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading the job…'));
  const el = h('div', {},
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('ol', {},
      h('li', {}, h('a', { href: '#/jobs' }, 'Jobs')),
      h('li', {}, h('a', { href: `#/jobs/${enc}` }, shortId(id))),
      h('li', { 'aria-current': 'page' }, 'Subtitle preview'))),
    h('h1', {}, 'Subtitle preview'),
    body);
  let audio = null;

  (async () => {
    let job;
    try {
      job = await get(`/v1/jobs/${enc}`);
    } catch (e) {
      if (!(e instanceof APIError && e.status === 401)) fill(body, h('p', { class: 'notice error', role: 'alert' }, e.message));
      return;
    }
    const vtts = ((job.local && job.local.artifacts) || []).filter((a) => a.name.startsWith('subtitles') && a.format === 'vtt');
    const langs = [...new Set(vtts.map((a) => a.language || ''))];
    const first = (job.result && job.result.transcription && (job.result.transcription.languages || [])[0]) || langs[0] || '';
    const lang = langs.includes(q.get('lang')) ? q.get('lang') : (langs.includes(first) ? first : langs[0]);
    if (!vtts.length) {
      fill(body, h('p', { class: 'notice' }, 'This job has no WebVTT subtitles: they are rendered when the job succeeds, with vtt among the configured formats.'));
      return;
    }
    const vttURL = apiURL(`/v1/jobs/${enc}/subtitles.vtt${lang ? `?lang=${encodeURIComponent(lang)}` : ''}`);
    let text;
    try {
      text = await getText(`/v1/jobs/${enc}/subtitles.vtt${lang ? `?lang=${encodeURIComponent(lang)}` : ''}`);
    } catch (e) {
      if (!(e instanceof APIError && e.status === 401)) fill(body, h('p', { class: 'notice error', role: 'alert' }, e.message));
      return;
    }
    const cues = parseVTT(text);
    const source = job.file && job.file.source;
    const href = webURL(source);
    const playable = Boolean(href);

    // Player
    const audioProblem = h('div', { role: 'alert' });
    const caption = h('div', { class: 'caption', id: 'caption', 'aria-label': 'Current cue' }, '');
    const list = h('ol', { class: 'cues', id: 'cues', 'aria-label': 'Cues' });
    const items = cues.map((c, i) => {
      const shown = shownLines(c);
      const b = h('button', { type: 'button', dataset: { index: String(i) }, 'aria-label': `Cue ${c.id} at ${fmtClock(c.start)}: ${c.voice ? `${c.voice}: ` : ''}${shown.join(' ')}. Play from here.` },
        h('span', { class: 'when' }, fmtClock(c.start)),
        h('span', {}, c.voice ? h('span', { class: 'speaker' }, `${c.voice}:`) : null, h('span', { class: 'cue-text' }, shown.join('\n')),
          h('span', { class: 'flags' })));
      const li = h('li', { dataset: { cue: c.id } }, b);
      list.appendChild(li);
      return li;
    });
    let active = -1;
    const setActive = (idx) => {
      if (idx === active) return;
      if (active >= 0 && items[active]) { items[active].classList.remove('active'); items[active].querySelector('button').removeAttribute('aria-current'); }
      active = idx;
      if (idx >= 0 && items[idx]) {
        items[idx].classList.add('active');
        items[idx].querySelector('button').setAttribute('aria-current', 'true');
        items[idx].scrollIntoView({ block: 'nearest' });
        caption.textContent = (cues[idx].voice ? `${cues[idx].voice}: ` : '') + shownLines(cues[idx]).join('\n');
      } else {
        caption.textContent = '';
      }
      list.dataset.active = idx >= 0 ? cues[idx].id : '';
    };
    const indexAt = (t) => cues.findIndex((c) => t >= c.start && t < c.end);

    let player;
    if (playable) {
      const track = h('track', { kind: 'subtitles', label: `Subtitles${lang ? ` (${lang})` : ''}`, srclang: lang || undefined, src: vttURL, default: true });
      audio = h('audio', { controls: true, preload: 'auto', src: href, id: 'player', 'aria-describedby': 'audio-hint' }, track);
      track.track.mode = 'hidden'; // fire cuechange without drawing (an audio element draws nothing anyway)
      // The track's own cue events drive the highlight; playback time is the fallback when the
      // track cannot load.
      let trackWorks = false;
      track.track.addEventListener('cuechange', () => {
        trackWorks = true;
        const act = [...(track.track.activeCues || [])];
        if (!act.length) { setActive(-1); return; }
        const cue = act[act.length - 1];
        let idx = cues.findIndex((c) => c.id && c.id === cue.id);
        if (idx < 0) idx = cues.findIndex((c) => Math.abs(c.start - cue.startTime) < 0.002);
        setActive(idx);
      });
      track.addEventListener('error', () => fill(audioProblem, h('p', { class: 'notice error' }, 'The WebVTT track did not load into the player; the highlight follows the playback time instead.')));
      audio.addEventListener('timeupdate', () => { if (!trackWorks) setActive(indexAt(audio.currentTime)); });
      audio.addEventListener('seeked', () => { if (!trackWorks) setActive(indexAt(audio.currentTime)); });
      audio.addEventListener('error', () => fill(audioProblem, h('p', { class: 'notice error' },
        `The audio could not be played from ${source}: the service's copy may not be reachable from this browser, or may need credentials.`)));
      list.addEventListener('click', (ev) => {
        const b = ev.target.closest('button[data-index]');
        if (!b) return;
        const c = cues[Number(b.dataset.index)];
        audio.currentTime = c.start + 0.001;
        setActive(Number(b.dataset.index));
        audio.play().catch(() => {});
      });
      player = h('div', {},
        audio,
        h('p', { id: 'audio-hint', class: 'hint' }, 'Audio from the service: ', h('a', { href, rel: 'noreferrer', class: 'id' }, source)),
        audioProblem);
    } else {
      player = h('p', { class: 'notice' }, source
        ? `The job's audio (${source}) is not a web address this browser can play.`
        : 'The job record names no audio file.');
      list.addEventListener('click', (ev) => {
        const b = ev.target.closest('button[data-index]');
        if (b) setActive(Number(b.dataset.index));
      });
    }

    // Rule report
    const params = job.request_params || {};
    const profileSel = h('select', { id: 'profile' },
      Object.keys(PROFILES).map((n) => h('option', { value: n }, n)));
    const report = h('div', { id: 'report' });
    const renderReport = () => {
      const p = limits(profileSel.value, params);
      const r = checkCues(cues, p);
      r.cues.forEach((c, i) => {
        const flags = items[i].querySelector('.flags');
        fill(flags, c.flags.map((f) => h('span', { class: 'badge warn' }, `⚠ ${RULES[f.rule]}`)));
      });
      const total = Object.values(r.counts).reduce((s, n) => s + n, 0);
      fill(report,
        h('dl', { class: 'facts' },
          h('dt', {}, 'Cues'), h('dd', {}, String(cues.length)),
          h('dt', {}, 'Lines'), h('dd', {}, String(r.lines)),
          h('dt', {}, 'Mean reading speed'), h('dd', {}, `${r.meanCPS.toFixed(1)} characters per second`),
          h('dt', {}, 'Limits'), h('dd', {}, `${p.maxChars} characters per line, ${p.maxLines} lines, ${p.maxCPS} cps, ${p.minDur.toFixed(2)}–${p.maxDur} s`),
          h('dt', {}, 'Findings'), h('dd', { id: 'findings' }, total ? Object.entries(r.counts).filter(([, n]) => n).map(([k, n]) => `${RULES[k]}: ${n}`).join(' · ') : 'None: every cue is within the limits.')),
        h('div', { class: 'table-wrap' }, h('table', { class: 'cards', id: 'cue-metrics' },
          h('caption', { class: 'visually-hidden' }, 'Metrics of each cue'),
          h('thead', {}, h('tr', {}, ['Cue', 'Duration', 'Lines', 'Longest line', 'cps', 'Findings'].map((t, i) => h('th', { scope: 'col', class: i > 0 && i < 5 ? 'num' : '' }, t)))),
          h('tbody', {}, r.cues.map((c) => h('tr', { class: c.flags.length ? 'failed' : '' },
            h('th', { scope: 'row', 'data-label': 'Cue' }, `${c.id} · ${fmtClock(c.start)}`),
            h('td', { class: 'num', 'data-label': 'Duration' }, `${c.duration.toFixed(2)} s`),
            h('td', { class: 'num', 'data-label': 'Lines' }, String(c.lines.length)),
            h('td', { class: 'num', 'data-label': 'Longest line' }, `${c.maxLine} chars`),
            h('td', { class: 'num', 'data-label': 'cps' }, Number.isFinite(c.cps) ? c.cps.toFixed(1) : '∞'),
            h('td', { 'data-label': 'Findings' }, c.flags.length ? c.flags.map((f) => h('div', {}, `⚠ ${f.text}`)) : 'OK')))))));
    };
    profileSel.addEventListener('change', renderReport);

    const langSel = langs.length > 1 ? h('div', { class: 'field' }, h('label', { for: 'lang' }, 'Language'),
      h('select', { id: 'lang', onchange: (ev) => { location.hash = `#/jobs/${enc}/subtitles?lang=${encodeURIComponent(ev.target.value)}`; } },
        langs.map((l) => h('option', { value: l, selected: l === lang }, l || '(none)')))) : null;

    fill(body,
      langSel,
      h('div', { class: 'preview' },
        h('section', { 'aria-labelledby': 'h-player' },
          h('h2', { id: 'h-player' }, 'Player'),
          player, caption,
          h('h3', { id: 'h-cues' }, `Cues (${cues.length})`),
          h('p', { class: 'hint' }, 'Choose a cue to play from it. The highlighted cue is the one on screen now.'),
          list),
        h('section', { 'aria-labelledby': 'h-report' },
          h('h2', { id: 'h-report' }, 'Rule report'),
          h('p', { class: 'hint' }, 'Computed in this browser from the WebVTT file: characters per line, lines per cue, reading speed (characters per second, line breaks not counted) and time on screen, against the profile below with the job\'s own subtitles_config limits over it. The server\'s subtitle checker has no read API, so its other rules (line and cue breaks, orphans, gaps) are not shown.'),
          h('div', { class: 'field' }, h('label', { for: 'profile' }, 'Profile'), profileSel),
          report)));
    renderReport();
  })();

  return {
    el, title: `Subtitles of ${shortId(id)}`,
    cleanup: () => { if (audio) { audio.pause(); audio.removeAttribute('src'); audio.load(); } },
  };
}

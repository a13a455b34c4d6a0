// WebVTT parsing and the subtitle metrics the preview computes in the browser. The server's
// rule checker (package subtitles) has no read API, so these are recomputed here from the file
// the read API serves, with the thresholds of the profiles the pipeline knows.

export const PROFILES = {
  'netflix-adult': { maxChars: 42, maxLines: 2, maxCPS: 20, minDur: 5 / 6, maxDur: 7, minPerWord: 0 },
  'netflix-kids': { maxChars: 42, maxLines: 2, maxCPS: 17, minDur: 5 / 6, maxDur: 7, minPerWord: 0 },
  bbc: { maxChars: 37, maxLines: 2, maxCPS: 20, minDur: 5 / 6, maxDur: 7, minPerWord: 0.3 },
};

function seconds(ts) {
  const m = /^(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})$/.exec(ts.trim());
  if (!m) return NaN;
  return Number(m[1] || 0) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4].padEnd(3, '0')) / 1000;
}

const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&nbsp;': '\u00a0', '&lrm;': '\u200e', '&rlm;': '\u200f' };

/** The visible text of a cue line: tags dropped, entities decoded. */
export function plain(line) {
  return line.replace(/<[^>]*>/g, '').replace(/&(amp|lt|gt|nbsp|lrm|rlm);/g, (e) => ENTITIES[e]);
}

/** Parses WebVTT into [{id, start, end, lines, voice}]; NOTE, STYLE and REGION blocks are skipped. */
export function parseVTT(text) {
  const blocks = text.replace(/\r\n?/g, '\n').split(/\n{2,}/);
  const cues = [];
  for (const block of blocks) {
    const lines = block.split('\n').filter((l, i, all) => !(i === all.length - 1 && l === ''));
    if (!lines.length) continue;
    if (/^(WEBVTT|NOTE|STYLE|REGION)\b/.test(lines[0])) continue;
    let i = 0;
    let id = '';
    if (!lines[0].includes('-->')) { id = lines[0]; i = 1; }
    if (!lines[i] || !lines[i].includes('-->')) continue;
    const [a, rest] = lines[i].split('-->');
    const b = rest.trim().split(/\s+/)[0];
    const raw = lines.slice(i + 1);
    const voice = (/<v(?:\.[^\s>]*)?\s+([^>]+)>/.exec(raw.join('\n')) || [])[1] || '';
    cues.push({ id: id || String(cues.length + 1), start: seconds(a), end: seconds(b), lines: raw.map(plain), voice });
  }
  return cues;
}

/** Metrics and rule flags of each cue, and totals, against profile p. */
export function checkCues(cues, p) {
  const report = { cues: [], counts: { cpl: 0, lines: 0, cps: 0, minDur: 0, maxDur: 0, overlap: 0 }, meanCPS: 0, lines: 0 };
  let chars = 0;
  let time = 0;
  cues.forEach((c, i) => {
    const dur = c.end - c.start;
    const perLine = c.lines.map((l) => [...l].length);
    const n = perLine.reduce((s, x) => s + x, 0);
    const words = c.lines.join(' ').split(/\s+/).filter(Boolean).length;
    const cps = dur > 0 ? n / dur : Infinity;
    const flags = [];
    const maxLine = Math.max(0, ...perLine);
    if (maxLine > p.maxChars) flags.push({ rule: 'cpl', text: `${maxLine} characters on a line (max ${p.maxChars})` });
    if (c.lines.length > p.maxLines) flags.push({ rule: 'lines', text: `${c.lines.length} lines (max ${p.maxLines})` });
    if (cps > p.maxCPS + 1e-9) flags.push({ rule: 'cps', text: `${cps.toFixed(1)} characters per second (max ${p.maxCPS})` });
    const minDur = Math.max(p.minDur, words * (p.minPerWord || 0));
    if (dur < minDur - 1e-9) flags.push({ rule: 'minDur', text: `${dur.toFixed(2)} s on screen (min ${minDur.toFixed(2)} s)` });
    if (dur > p.maxDur + 1e-9) flags.push({ rule: 'maxDur', text: `${dur.toFixed(2)} s on screen (max ${p.maxDur} s)` });
    if (i > 0 && c.start < cues[i - 1].end - 1e-9) flags.push({ rule: 'overlap', text: 'starts before the previous cue ends' });
    for (const f of flags) report.counts[f.rule] += 1;
    report.lines += c.lines.length;
    chars += n;
    if (dur > 0) time += dur;
    report.cues.push({ ...c, duration: dur, chars: n, perLine, maxLine, cps, flags });
  });
  report.meanCPS = time > 0 ? chars / time : 0;
  return report;
}

// End-to-end browser tests of the dashboard: playwright-core drives Debian's chromium, headless,
// against a real receiver + pipeline + sinks and the sandbox, all on loopback (./launch).
// Plain Node, no test runner. Screenshots of every page go to ./screenshots (not committed),
// with the caption page for OBS (13-captions-page-*.png).
//
//   node e2e/ui/test.mjs            (scripts/ui-test.sh installs what it needs and runs this)
//
// Environment: CHROMIUM (default /usr/bin/chromium), UI_LAUNCHER (a built ./launch; default
// e2e/ui/.bin/launch, else `go run ./e2e/ui/launch`), HEADED=1 to watch.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

import { startLauncher } from '../launcher.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const shotsDir = path.join(here, 'screenshots');
const T = { short: 10_000, long: 45_000 };

// ------------------------------------------------------------------ launcher

/** The texts of a live session's stored finals, in order, and whether the session has ended. */
async function storedFinals(info, id) {
  const r = await fetch(`${info.serve}/v1/live/${encodeURIComponent(id)}/messages?limit=1000`, { headers: { Authorization: `Bearer ${info.token}` } });
  if (r.status !== 200) return { finals: [], ended: false };
  const msgs = await r.json();
  return {
    finals: msgs.filter((m) => m.type === 'transcript' && m.payload && m.payload.data && m.payload.data.is_final)
      .map((m) => m.payload.data.utterance.text.trim()),
    ended: msgs.some((m) => m.type === 'end_session'),
  };
}

async function control(info, method, p, body) {
  const res = await fetch(info.control + p, { method, body: body && JSON.stringify(body) });
  assert.equal(res.status, 200, `control ${method} ${p}: ${res.status} ${await res.clone().text()}`);
  return res.json();
}

// ------------------------------------------------------------------ checks run in the page

/** Inputs, selects and textareas without an accessible name. */
function unlabelled(page) {
  return page.evaluate(() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.outerHTML.slice(0, 80)));
}

/** Visible text whose contrast with its background is under WCAG AA (4.5:1, 3:1 large). */
function lowContrast(page) {
  return page.evaluate(() => {
    const parse = (c) => { const m = c.match(/[\d.]+/g) || [0, 0, 0, 0]; return [+m[0], +m[1], +m[2], m[3] === undefined ? 1 : +m[3]]; };
    const lum = ([r, g, b]) => {
      const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const bgOf = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c[3] > 0.5) return c;
      }
      return [255, 255, 255, 1];
    };
    const bad = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const seen = new Set();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || seen.has(el)) continue;
      seen.add(el);
      if (el.closest('[hidden], .visually-hidden, option, :disabled, audio')) continue;
      const r = el.getBoundingClientRect();
      if (!r.width || !r.height) continue;
      const cs = getComputedStyle(el);
      if (cs.visibility === 'hidden' || +cs.opacity === 0) continue;
      const fg = parse(cs.color);
      const l1 = lum(fg); const l2 = lum(bgOf(el));
      const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
      const size = parseFloat(cs.fontSize);
      const large = size >= 24 || (size >= 18.66 && +cs.fontWeight >= 700);
      if (ratio < (large ? 3 : 4.5)) bad.push(`${ratio.toFixed(2)}: ${n.textContent.trim().slice(0, 40)}`);
    }
    return bad;
  });
}

async function accessible(page, where) {
  assert.deepEqual(await unlabelled(page), [], `${where}: form controls without a label`);
  assert.deepEqual(await lowContrast(page), [], `${where}: text under WCAG AA contrast`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `${where}: the page is ${overflow}px wider than the viewport`);
}

// ------------------------------------------------------------------ the run

const results = [];
const shots = [];
async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push(true);
    console.log(`ok ${results.length} - ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (e) {
    results.push(false);
    console.log(`not ok ${results.length} - ${name}`);
    console.log(`  ${String(e && e.stack ? e.stack : e).split('\n').join('\n  ')}`);
    throw e;
  }
}

async function main() {
  fs.rmSync(shotsDir, { recursive: true, force: true });
  fs.mkdirSync(shotsDir, { recursive: true });
  const launcher = startLauncher('ui', 'UI_LAUNCHER');
  let context;
  let page;
  const pageErrors = [];
  const shot = async (name, opts = {}) => {
    const file = path.join(shotsDir, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true, ...opts });
    shots.push(path.relative(root, file));
  };
  try {
    const info = await launcher.info;
    console.log(`# dashboard ${info.ui} · sandbox ${info.sandbox} · seeded job ${info.seeded_job}`);
    const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
    // A fresh profile every run: launchPersistentContext passes it as --user-data-dir, and
    // headless adds --headless.
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'scribehook-ui-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath,
      headless: !process.env.HEADED,
      viewport: { width: 1280, height: 900 },
      acceptDownloads: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--autoplay-policy=no-user-gesture-required'],
    });
    console.log(`# ${executablePath} ${context.browser() ? context.browser().version() : ''}`);
    page = context.pages()[0] || await context.newPage();
    page.setDefaultTimeout(T.short);
    page.on('pageerror', (e) => pageErrors.push(e.message));

    await step('the dashboard sends a visitor without a session to the sign-in page', async () => {
      await page.goto(info.ui);
      await page.waitForURL(/\/ui\/login\?/);
      await page.getByRole('heading', { name: /scribehook/ }).waitFor();
      await accessible(page, 'sign-in');
      await shot('01-sign-in');
    });

    await step('signing in with the read token (keyboard only) sets a Secure, HttpOnly, SameSite=Strict cookie', async () => {
      await page.getByLabel('Read API token').fill('not the token');
      await page.keyboard.press('Enter');
      await page.waitForURL(/error=invalid/);
      await page.getByRole('alert').filter({ hasText: 'not the read token' }).waitFor();
      await page.getByLabel('Read API token').fill(info.token);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/ui\/.*#\/jobs/);
      const cookies = await context.cookies(info.serve);
      assert.equal(cookies.length, 1, JSON.stringify(cookies));
      const [c] = cookies;
      assert.equal(c.name, '__Host-scribehook_ui');
      assert.ok(c.httpOnly && c.secure && c.sameSite === 'Strict', JSON.stringify(c));
      assert.ok(!c.value.includes(info.token), 'the cookie holds the token itself');
      assert.equal(await page.evaluate(() => document.cookie), '', 'scripts can read the cookie');
      const anon = await fetch(`${info.serve}/v1/jobs`);
      assert.equal(anon.status, 401, 'the read API answers without credentials');
    });

    await step('the jobs list shows the seeded job, done', async () => {
      const row = page.locator(`tr[data-id="${info.seeded_job}"]`);
      await row.getByText('Done').waitFor();
      await page.getByRole('heading', { name: 'Jobs', level: 1 }).waitFor();
      await accessible(page, 'jobs');
      await shot('02-jobs');
    });

    let jobId;
    await step('a job submitted through the sandbox appears and turns done without a reload', async () => {
      await page.evaluate(() => { window.__sameDocument = true; });
      // Upload the recording to the sandbox (its /v2/files/{id} then serves it), then create
      // the job with its callback pointing at the receiver.
      const form = new FormData();
      form.append('audio', new Blob([fs.readFileSync(path.join(root, 'cmd/scribehook/demodata/sample.wav'))], { type: 'audio/wav' }), 'sample.wav');
      const up = await fetch(`${info.sandbox}/v2/upload`, { method: 'POST', headers: { [info.key_header]: info.api_key }, body: form });
      assert.equal(up.status, 201, await up.clone().text());
      const { audio_url: audioURL } = await up.json();
      ({ id: jobId } = await control(info, 'POST', '/submit', { audio_url: audioURL, custom_metadata: { source: 'ui-e2e' } }));
      const status = page.locator(`tr[data-id="${jobId}"] [data-status]`);
      await status.waitFor({ timeout: T.short });
      const first = await status.getAttribute('data-status');
      assert.notEqual(first, 'done', 'the job was already done when it first showed: nothing was seen to change');
      await shot('03-jobs-submitted');
      await page.locator(`tr[data-id="${jobId}"] [data-status="done"]`).waitFor({ timeout: T.long });
      assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was reloaded');
      console.log(`#   ${jobId}: ${first} → done`);
      await shot('04-jobs-done');
    });

    await step('the job page shows transcript, failed add-on with its error, artifacts with downloads', async () => {
      await page.getByRole('link', { name: jobId }).click();
      await page.getByRole('heading', { level: 1, name: new RegExp(jobId) }).waitFor();
      await page.locator('#transcript li').first().waitFor();
      assert.ok(await page.locator('#transcript li').count() >= 2);
      assert.match(await page.locator('#transcript').innerText(), /Speaker 1:/);
      const failed = page.locator('tr[data-addon="sentiment_analysis"]');
      assert.match(await failed.innerText(), /Failed[\s\S]*501 NotAvailableInSandbox[\s\S]*needs a model/);
      assert.match(await page.locator('tr[data-addon="summarization"]').innerText(), /Succeeded/);
      assert.match(await page.locator('#request-params').innerText(), /\/v1\/callbacks\/\[token hidden\]/);
      assert.equal(await page.locator('#local-deliveries').innerText(), '1');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: 'Download subtitles.en.srt' }).click(),
      ]);
      const srt = fs.readFileSync(await download.path(), 'utf8');
      assert.match(srt, /^1\r?\n00:00:\d\d,\d{3} --> /, `downloaded SRT: ${srt.slice(0, 80)}`);
      await page.locator('#sink-deliveries').getByText('captions-hook').waitFor({ timeout: T.long });
      await accessible(page, 'job');
      await shot('05-job');
    });

    await step('the job page names its artifacts but never shows where the server keeps them', async () => {
      await page.locator('#artifacts code', { hasText: 'subtitles.en.srt' }).waitFor();
      const text = await page.locator('body').innerText();
      assert.ok(!text.includes(info.data_dir), `the page text shows a server path (${info.data_dir}):\n${text}`);
      assert.ok(!(await page.content()).includes(info.data_dir), `the page's HTML holds a server path (${info.data_dir})`);
      // The read API keeps the paths (DESIGN.md): without them this step would prove nothing.
      const job = await page.evaluate(async (id) => (await fetch(`../v1/jobs/${encodeURIComponent(id)}`)).json(), jobId);
      const paths = job.local.artifacts.map((a) => a.path);
      assert.ok(paths.length > 0 && paths.every((p) => p.startsWith(info.data_dir)), `artifact paths: ${paths}`);
    });

    let searchWord;
    await step('the search box finds a word of the job, marks it, and its link opens the job page at that utterance', async () => {
      const job = await page.evaluate(async (id) => (await fetch(`../v1/jobs/${encodeURIComponent(id)}`)).json(), jobId);
      const utts = job.result.transcription.utterances;
      const target = utts[utts.length - 1]; // the last: the job page must scroll to it
      const words = target.text.match(/[\p{L}\p{N}]+/gu) || [];
      searchWord = words.reduce((a, b) => (b.length > a.length ? b : a), '');
      assert.ok(searchWord.length >= 2, `no word to search in "${target.text}"`);
      await page.getByRole('link', { name: 'Search', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Search transcripts' }).waitFor();
      await page.getByLabel('Words to find').fill(searchWord);
      await page.keyboard.press('Enter');
      await page.waitForURL(/#\/search\?q=/);
      const hit = page.locator(`#search-results li[data-job="${jobId}"][data-start="${target.start}"]`);
      await hit.waitFor();
      const marks = await hit.locator('mark').allInnerTexts();
      assert.ok(marks.length >= 1 && marks.every((m) => m.toLowerCase() === searchWord.toLowerCase()), `marks ${marks} for ${searchWord}`);
      const tags = await hit.locator('.hit-words *').evaluateAll((els) => els.map((e) => e.tagName));
      assert.ok(tags.every((t) => t === 'MARK'), `elements in a hit's text: ${tags}`);
      await accessible(page, 'search');
      await shot('05b-search');
      await hit.getByRole('link').click();
      await page.waitForURL(/#\/jobs\/[^?]+\?t=/);
      const at = page.locator('#transcript li.at');
      await at.waitFor();
      assert.equal(await at.getAttribute('data-start'), String(target.start));
      assert.equal(await at.getAttribute('aria-current'), 'true');
      const visible = await at.evaluate((el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; });
      assert.ok(visible, 'the job page did not scroll to the utterance');
      await shot('05c-job-at-hit');
    });

    await step("a hit whose utterance holds markup shows it as text: no element, no script", async () => {
      await page.evaluate(() => { window.__xss = 0; location.hash = '#/search?q=hostile'; });
      const hit = page.locator(`#search-results li[data-job="${info.hostile_job}"]`);
      await hit.waitFor();
      assert.equal(await hit.locator('.hit-words').innerText(), 'hostile <img src=x onerror="window.__xss=1"> <b>bold</b> & more');
      assert.deepEqual(await hit.locator('.hit-words *').evaluateAll((els) => els.map((e) => `${e.tagName}:${e.textContent}`)), ['MARK:hostile']);
      assert.equal(await page.evaluate(() => window.__xss), 0, 'the utterance ran a script');
      await page.locator('#search-results').evaluate(() => new Promise((r) => setTimeout(r, 200)));
      assert.equal(await page.evaluate(() => window.__xss), 0, 'the utterance ran a script');
      // Back where the next step starts: the job's page.
      await page.evaluate((h) => { location.hash = h; }, `#/jobs/${encodeURIComponent(jobId)}`);
      await page.getByRole('heading', { level: 1, name: new RegExp(jobId) }).waitFor();
      await page.getByRole('link', { name: 'Subtitle preview' }).waitFor();
    });

    await step('the subtitle preview plays the audio and the active cue changes', async () => {
      await page.getByRole('link', { name: 'Subtitle preview' }).click();
      await page.getByRole('heading', { level: 1, name: 'Subtitle preview' }).waitFor();
      await page.locator('#cues li').nth(1).waitFor();
      // The <track> loaded the VTT through the cookie: the player knows every cue.
      await page.waitForFunction(() => { const t = document.querySelector('track'); return t && t.readyState === 2; });
      const cues = await page.locator('#cues li').count();
      assert.equal(await page.evaluate(() => document.querySelector('track').track.cues.length), cues);
      assert.match(await page.locator('#findings').innerText(), /\S/);
      // Play from the first cue (a button: the keyboard reaches it), then wait for the next.
      await page.locator('#cues button').first().focus();
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.getElementById('cues').dataset.active === '1');
      const firstCaption = await page.locator('#caption').innerText();
      await page.waitForFunction(() => !['', '1'].includes(document.getElementById('cues').dataset.active), null, { timeout: T.long });
      const now = await page.evaluate(() => ({ t: document.getElementById('player').currentTime, active: document.getElementById('cues').dataset.active }));
      assert.ok(now.t > 1, `playback at ${now.t}`);
      assert.notEqual(await page.locator('#caption').innerText(), firstCaption);
      assert.equal(await page.locator('#cues li.active').count(), 1);
      console.log(`#   ${cues} cues; cue 1 → cue ${now.active} at ${now.t.toFixed(2)} s`);
      await accessible(page, 'subtitles');
      await shot('06-subtitles');
      await page.evaluate(() => document.getElementById('player').pause());
    });

    let dialogueId;
    await step("a diarized job's speakers are named on its page: a refused name shows its rule, saved names show in the transcript and the subtitle preview", async () => {
      ({ id: dialogueId } = await control(info, 'POST', '/submit', { audio_url: info.dialogue_url }));
      await page.evaluate((h) => { location.hash = h; }, `#/jobs/${encodeURIComponent(dialogueId)}`);
      await page.getByRole('heading', { level: 1, name: new RegExp(dialogueId) }).waitFor();
      await page.locator('#speakers-form').waitFor({ timeout: T.long });
      const labels = () => page.locator('#transcript .speaker').allInnerTexts();
      assert.deepEqual(await labels(), ['Speaker 1:', 'Speaker 2:', 'Speaker 1:', 'Speaker 2:']);
      await page.locator('#speakers-revision', { hasText: 'as first rendered' }).waitFor();
      assert.equal(await page.locator('#speakers-revision').innerText(), '1 (as first rendered)');
      const first = page.getByLabel('Speaker 1', { exact: true });
      const second = page.getByLabel('Speaker 2', { exact: true });
      assert.equal(await first.inputValue(), '');

      // Names the rules refuse (a tab; 65 characters): each field shows its rule, nothing is saved.
      await first.fill('Alice\tMartin');
      await second.fill('B'.repeat(65));
      await page.getByRole('button', { name: 'Save names' }).click();
      await page.locator('#speakers-problem').getByText('Not saved: 2 names break a rule.').waitFor();
      assert.equal(await page.locator('#spk-err-0').innerText(),
        '⚠ Name must not contain control or formatting characters (line breaks, tabs, bidirectional marks).');
      assert.equal(await page.locator('#spk-err-1').innerText(), '⚠ Name must be at most 64 characters.');
      assert.equal(await first.getAttribute('aria-invalid'), 'true');
      assert.match(await first.getAttribute('aria-describedby'), /spk-err-0/);
      assert.equal(await page.evaluate(() => document.activeElement.id), 'spk-name-0', 'focus is not on the first refused name');
      assert.equal(await page.locator('#speakers-revision').innerText(), '1 (as first rendered)');
      assert.deepEqual(await labels(), ['Speaker 1:', 'Speaker 2:', 'Speaker 1:', 'Speaker 2:']);
      await accessible(page, 'job with refused speaker names');
      await shot('05b-job-speakers-refused');

      // Valid names: saved as revision 2, the rules' messages gone, the transcript renamed.
      await first.fill('Alice Martin');
      await second.fill('Bob Stone');
      await page.keyboard.press('Enter');
      const saved = page.locator('#speakers-status');
      await saved.getByText('Names saved.').waitFor();
      assert.equal(await saved.innerText(),
        'Names saved. The subtitles were rendered again as revision 2 (subtitles.en.srt, subtitles.en.vtt), and subtitles.ready was queued for the sinks.');
      assert.equal(await page.locator('#speakers-revision').innerText(), '2');
      assert.equal(await page.locator('#speakers-problem').innerText(), '');
      assert.equal(await page.locator('#spk-err-0').isHidden(), true);
      assert.equal(await first.getAttribute('aria-invalid'), null);
      await page.locator('#transcript .speaker', { hasText: 'Alice Martin:' }).first().waitFor();
      assert.deepEqual(await labels(), ['Alice Martin:', 'Bob Stone:', 'Alice Martin:', 'Bob Stone:']);
      await accessible(page, 'job with named speakers');
      await shot('05c-job-speakers-named');

      // A reload shows the stored names in the fields.
      await page.reload();
      await page.locator('#speakers-revision', { hasText: /^2$/ }).waitFor();
      assert.equal(await page.getByLabel('Speaker 1', { exact: true }).inputValue(), 'Alice Martin');
      assert.equal(await page.getByLabel('Speaker 2', { exact: true }).inputValue(), 'Bob Stone');

      // The subtitle preview reads the WebVTT of revision 2: its voices are the names.
      await page.getByRole('link', { name: 'Subtitle preview' }).click();
      await page.getByRole('heading', { level: 1, name: 'Subtitle preview' }).waitFor();
      await page.locator('#cues li').first().waitFor();
      const voices = await page.locator('#cues .speaker').allInnerTexts();
      assert.equal(voices.length, await page.locator('#cues li').count(), 'a cue without its voice');
      assert.deepEqual([...new Set(voices)], ['Alice Martin:', 'Bob Stone:']);
      // The preview shows the label once, as the voice.
      assert.equal(await page.locator('#cues li').first().locator('.speaker').innerText(), 'Alice Martin:');
      assert.equal(await page.locator('#cues li').first().locator('.cue-text').innerText(), 'Welcome to scribehook');
      const vtt = await page.evaluate(async (id) => (await fetch(`../v1/jobs/${encodeURIComponent(id)}/subtitles.vtt`)).text(), dialogueId);
      // The name is the cue's voice and, for players that do not show voices, a label at each turn.
      assert.match(vtt, /\n<v Alice Martin>Alice Martin: Welcome to scribehook\n/);
      assert.match(vtt, /<v Bob Stone>/);
      await accessible(page, 'subtitles with named speakers');
      await shot('06b-subtitles-speakers');
    });

    let sessionId;
    await step('a live session is followed: partials update in place, finals arrive, categories toggle', async () => {
      await page.getByRole('link', { name: 'Live', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Live sessions' }).waitFor();
      ({ id: sessionId } = await control(info, 'POST', '/live'));
      await page.getByLabel('Session id').fill(sessionId);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: new RegExp(sessionId) }).waitFor();
      // Watch the transcript: a partial line must change in place before its final lands.
      await page.evaluate(() => {
        window.__partialEdits = 0;
        new MutationObserver((records) => {
          for (const r of records) if (r.target.closest && r.target.closest('li.partial')) window.__partialEdits += 1;
          for (const r of records) if (r.type === 'characterData' || (r.target.classList && r.target.classList.contains('partial'))) window.__partialEdits += 1;
        }).observe(document.getElementById('finals'), { subtree: true, childList: true, characterData: true });
      });
      await page.locator('#finals li.final').first().waitFor({ timeout: T.long });
      await page.locator('#finals li.final').nth(1).waitFor({ timeout: T.long });
      assert.match(await page.locator('#live-state').innerText(), /Following|ended/);
      await shot('07-live-following');
      await page.locator('#live-state', { hasText: 'Session ended' }).waitFor({ timeout: T.long });
      const finals = await page.locator('#finals li.final').count();
      const partialCount = Number((await page.locator('label[for="cat-partial_transcripts"] .count').innerText()).replace(/\D/g, ''));
      assert.ok(partialCount > 0, 'no partial transcript arrived');
      assert.ok(await page.evaluate(() => window.__partialEdits) > 0, 'no partial was updated in place');
      assert.equal(await page.locator('#finals li.partial').count(), 0, 'partials left after their finals');
      for (const t of ['start_session', 'speech_start', 'audio_chunk', 'end_session']) {
        assert.ok(await page.locator(`#timeline li[data-type="${t}"]`).count() > 0, `no ${t} in the timeline`);
      }
      // Toggles: speech events off hides them, on shows them again.
      await page.getByLabel(/Speech events/).uncheck();
      assert.equal(await page.locator('#timeline li[data-type="speech_start"]:visible').count(), 0);
      await page.getByLabel(/Speech events/).check();
      assert.ok(await page.locator('#timeline li[data-type="speech_start"]:visible').count() > 0);
      await page.getByLabel(/Final transcripts/).uncheck();
      assert.equal(await page.locator('#finals li.final:visible').count(), 0);
      await page.getByLabel(/Final transcripts/).check();
      console.log(`#   ${sessionId}: ${finals} finals, ${partialCount} partials`);
      await accessible(page, 'live');
      await shot('08-live-ended');
    });

    await step("the live session page offers its signed caption links: copied, and the playlist read with them alone lists the session's segments", async () => {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: info.serve });
      const playlistField = page.getByLabel(/^Playlist/);
      const pageField = page.getByLabel(/^Caption page/);
      await page.locator('#captions-url').waitFor();
      const enc = encodeURIComponent(sessionId);
      const playlistURL = await playlistField.inputValue();
      const pageURL = await pageField.inputValue();
      assert.match(playlistURL, new RegExp(`^${info.serve}/v1/live/${enc}/captions\\.m3u8\\?exp=\\d+&sig=[\\w-]+$`));
      assert.match(pageURL, new RegExp(`^${info.serve}/v1/live/${enc}/captions\\.html\\?exp=\\d+&sig=[\\w-]+$`));
      assert.ok(!playlistURL.includes(info.token) && !pageURL.includes(info.token), 'a caption link holds the read token');
      assert.equal(await page.locator('#captions-open').getAttribute('href'), pageURL);
      await page.getByRole('button', { name: 'Copy the playlist URL' }).click();
      await page.locator('#captions-copied', { hasText: 'Copied the playlist URL.' }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), playlistURL);
      await page.getByRole('button', { name: 'Copy the caption page URL' }).click();
      await page.locator('#captions-copied', { hasText: 'Copied the caption page URL.' }).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), pageURL);
      // What a player does: the playlist, then each segment it lists, with the signature only
      // (no cookie).
      const read = await page.evaluate(async (u) => {
        const get = async (url) => { const r = await fetch(url, { credentials: 'omit', cache: 'no-store' }); return { status: r.status, type: r.headers.get('Content-Type'), text: await r.text() }; };
        const playlist = await get(u);
        const uris = playlist.text.split('\n').filter((l) => l && !l.startsWith('#'));
        const segments = [];
        for (const s of uris) segments.push(await get(new URL(s, u).href));
        return { playlist, uris, segments };
      }, playlistURL);
      assert.equal(read.playlist.status, 200, read.playlist.text);
      assert.equal(read.playlist.type, 'application/vnd.apple.mpegurl');
      assert.match(read.playlist.text, /^#EXTM3U\n/);
      assert.match(read.playlist.text, /#EXT-X-PROGRAM-DATE-TIME:/);
      assert.match(read.playlist.text, /#EXT-X-ENDLIST\n$/, 'the ended session\'s playlist is not closed');
      assert.ok(read.uris.length >= 2, `segments listed: ${read.uris}`);
      for (const u of read.uris) assert.match(u, /^captions\/\d+\.vtt\?exp=\d+&sig=[\w-]+$/);
      const { finals } = await storedFinals(info, sessionId);
      assert.ok(finals.length >= 2, `finals stored: ${finals}`);
      const cues = [];
      for (const s of read.segments) {
        assert.equal(s.status, 200, s.text);
        assert.match(s.text, /^WEBVTT/);
        for (const block of s.text.split(/\n\n+/)) {
          const lines = block.split('\n');
          const at = lines.findIndex((l) => l.includes('-->'));
          if (at >= 0) cues.push(lines.slice(at + 1).join(' ').replace(/<v [^>]*>|<\/v>/g, ''));
        }
      }
      for (const t of finals) assert.ok(cues.includes(t), `no cue "${t}" in the segments: ${JSON.stringify(cues)}`);
      console.log(`#   captions: ${read.uris.length} segments, ${new Set(cues).size} cues`);
      await accessible(page, 'live with caption links');
      await shot('08b-live-captions-links');
    });

    await step('the caption page (signed URL, no cookie) shows the last finals large, new ones arriving over server-sent events; a wrong signature is refused', async () => {
      const auth = { headers: { Authorization: `Bearer ${info.token}` } };
      // A browser of its own, as OBS is: no cookie of the dashboard rides with the page. It
      // starts first, so that the page opens early in the session.
      const obs = await chromium.launch({ executablePath, headless: !process.env.HEADED, args: ['--no-sandbox', '--disable-gpu', '--disable-quic'] });
      try {
        const { id } = await control(info, 'POST', '/live');
        const enc = encodeURIComponent(id);
        for (let i = 0; i < 300 && (await storedFinals(info, id)).finals.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
        const res = await fetch(`${info.serve}/v1/live/${enc}/captions/url?ttl=10m`, { method: 'POST', ...auth });
        assert.equal(res.status, 200, await res.clone().text());
        const u = await res.json();
        const ctx = await obs.newContext({ viewport: { width: 1280, height: 720 } });
        const cp = await ctx.newPage();
        cp.setDefaultTimeout(T.short);
        const problems = [];
        cp.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        cp.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`); });
        cp.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
        // The first events request is answered 503, as a proxy in front of a restarting server
        // would: EventSource gives up on that for good, so the page must open a new one.
        let eventRequests = 0;
        await cp.route('**/captions/events?*', (route) => {
          eventRequests += 1;
          if (eventRequests === 1) return route.fulfill({ status: 503, contentType: 'text/plain', body: 'restarting' });
          return route.continue();
        });
        const loaded = await cp.goto(u.page_url);
        assert.equal(loaded.status(), 200);
        assert.match(loaded.headers()['content-security-policy'], /script-src 'nonce-[^']+'/);
        const atOpen = (await storedFinals(info, id)).finals.length;
        await cp.evaluate(() => { window.__sameDocument = true; });
        const lines = () => cp.locator('#captions p').allInnerTexts();
        await cp.locator('#captions p').first().waitFor();
        assert.equal(eventRequests, 2, 'the page did not open the events again after the 503');
        await cp.unroute('**/captions/events?*');
        // The session goes on while the page is open; once it has ended, the page shows its last
        // two finals, the partials gone.
        let stored = { finals: [], ended: false };
        for (let i = 0; i < 600 && !stored.ended; i++) {
          await new Promise((r) => setTimeout(r, 100));
          stored = await storedFinals(info, id);
        }
        assert.ok(stored.ended, 'the session did not end');
        const { finals } = stored;
        await cp.waitForFunction((want) => [...document.querySelectorAll('#captions p')].map((p) => p.textContent).join('\n') === want,
          finals.slice(-2).join('\n'));
        assert.deepEqual(await lines(), finals.slice(-2));
        assert.equal(await cp.locator('#captions p.partial').count(), 0);
        assert.ok(atOpen < finals.length, `every final was stored before the page opened (${atOpen}): none arrived live`);
        assert.equal(await cp.evaluate(() => window.__sameDocument), true, 'the page was reloaded');
        const style = await cp.evaluate(() => {
          const cs = getComputedStyle(document.querySelector('#captions p'));
          return { size: cs.fontSize, color: cs.color, weight: cs.fontWeight, bg: getComputedStyle(document.body).backgroundColor, html: getComputedStyle(document.documentElement).backgroundColor };
        });
        assert.deepEqual(style, { size: '48px', color: 'rgb(255, 255, 255)', weight: '600', bg: 'rgba(0, 0, 0, 0)', html: 'rgba(0, 0, 0, 0)' });
        console.log(`#   caption page: ${atOpen} of ${finals.length} finals stored when it opened; ends on ${JSON.stringify(await lines())}`);
        let file = path.join(shotsDir, '13-captions-page-transparent.png');
        await cp.screenshot({ path: file, omitBackground: true });
        shots.push(path.relative(root, file));

        // Its query tunes it: three lines, larger, on a colour.
        await cp.goto(`${u.page_url}&lines=3&size=64&bg=${encodeURIComponent('#101820')}`);
        await cp.waitForFunction((want) => [...document.querySelectorAll('#captions p')].map((p) => p.textContent).join('\n') === want,
          finals.slice(-3).join('\n'));
        assert.equal(await cp.evaluate(() => getComputedStyle(document.querySelector('#captions p')).fontSize), '64px');
        assert.equal(await cp.evaluate(() => getComputedStyle(document.body).backgroundColor), 'rgb(16, 24, 32)');
        file = path.join(shotsDir, '13b-captions-page-dark.png');
        await cp.screenshot({ path: file });
        shots.push(path.relative(root, file));

        // CSP, EventSource and script errors would show here (the 503 is the test's).
        assert.deepEqual(problems.filter((p) => !/\b503\b/.test(p)), [], 'the caption page logged errors');
        assert.ok(problems.length <= 2, `the 503 was retried in a loop: ${problems}`);

        // A wrong signature: a 403 and its reason, no page.
        const sig = new URL(u.page_url).searchParams.get('sig');
        // Its first character changed: any first character is canonical base64url, so this is a
        // wrong signature (403), never a malformed one (401) as a changed last character can be.
        const bad = u.page_url.replace(`sig=${sig}`, `sig=${sig.startsWith('A') ? 'B' : 'A'}${sig.slice(1)}`);
        const refused = await cp.goto(bad);
        assert.equal(refused.status(), 403);
        assert.match(await cp.locator('body').innerText(), /captions URL signature does not match this session/);
        assert.equal(await cp.locator('#captions').count(), 0, 'the refused URL shows the caption page');
        // CSP, EventSource and script errors would show here.
      } finally {
        await obs.close();
      }
    });

    await step('a dead letter is replayed from the sinks page and reaches its sink', async () => {
      await control(info, 'POST', '/hook', { healthy: true });
      const before = await control(info, 'GET', '/hook');
      await page.getByRole('link', { name: 'Sinks', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Sinks' }).waitFor();
      await page.locator('#sinks-table tr[data-sink="captions-hook"]').waitFor();
      const health = await page.locator('#sinks-table tr[data-sink="captions-hook"]').innerText();
      assert.match(health, /Open|Closed/);
      console.log(`#   captions-hook: ${health.replace(/\s+/g, ' ')}`);
      const row = page.locator(`#deadletters-table tr[data-job="${info.seeded_job}"]`);
      await row.waitFor();
      assert.match(await row.innerText(), /503 Service Unavailable/);
      await accessible(page, 'sinks');
      await shot('09-sinks');
      const id = await row.getAttribute('data-id');
      await page.getByRole('button', { name: `Replay dead letter ${id} to captions-hook` }).click();
      await page.locator('#replay-status').getByText(`Dead letter ${id}`).waitFor();
      assert.equal(await page.locator(`#deadletters-table tr[data-id="${id}"]`).count(), 0);
      for (let i = 0; i < 200; i++) {
        if ((await control(info, 'GET', '/hook')).received > before.received) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = await control(info, 'GET', '/hook');
      assert.ok(after.received > before.received, `the hook received nothing after the replay: ${JSON.stringify(after)}`);
      await shot('10-sinks-replayed');
    });

    await step("a sink's deliveries are listed and a window is replayed from the sinks page", async () => {
      await control(info, 'POST', '/hook', { healthy: true });
      await page.locator('#hist-sink option[value="captions-hook"]').waitFor({ state: 'attached' });
      await page.locator('#hist-sink').selectOption('captions-hook');
      await page.getByRole('button', { name: 'Show', exact: true }).click();
      const delivered = page.locator('#deliveries-table tr[data-status="delivered"]');
      await delivered.first().waitFor({ timeout: T.long });
      const shown = await delivered.count();
      assert.ok(shown > 0, 'no delivered row in the history');
      await accessible(page, 'sinks with deliveries');
      const before = await control(info, 'GET', '/hook');
      // The last day, every type: each delivered event of the sink goes out again.
      const since = new Date(Date.now() - 24 * 3600 * 1000);
      const local = new Date(since.getTime() - since.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
      await page.locator('#rp-since').fill(local);
      await page.getByRole('button', { name: 'Replay', exact: true }).click();
      const status = page.locator('#sink-replay-status');
      await status.getByText(/captions-hook: queued [1-9]\d* again/).waitFor();
      const msg = await status.innerText();
      console.log(`#   ${msg}`);
      for (let i = 0; i < 200; i++) {
        if ((await control(info, 'GET', '/hook')).received > before.received) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = await control(info, 'GET', '/hook');
      assert.ok(after.received > before.received, `the hook received nothing after the window's replay: ${JSON.stringify(after)}`);
      // A window whose since is missing is refused with the field named.
      await page.locator('#rp-since').fill('');
      await page.locator('#sink-replay').evaluate((f) => f.querySelector('#rp-since').removeAttribute('required'));
      await page.getByRole('button', { name: 'Replay', exact: true }).click();
      await page.getByText(/Replay failed: invalid replay window: since: required/).waitFor();
      await shot('10b-sinks-window-replayed');
    });

    await step('a sink disabled by a 410 keeps its queue until Enable, then delivers it', async () => {
      const row = page.locator('#sinks-table tr[data-sink="captions-hook"]');
      await control(info, 'POST', '/hook', { gone: true });
      await control(info, 'POST', '/submit', { audio_url: info.audio_url });
      await row.getByText('Disabled').waitFor({ timeout: T.long });
      // The destination is back, but the sink stays disabled: the next job's event waits.
      await control(info, 'POST', '/hook', { healthy: true });
      const before = await control(info, 'GET', '/hook');
      await control(info, 'POST', '/submit', { audio_url: info.audio_url });
      await row.locator('td[data-label="Queue depth"]', { hasText: /^[1-9]/ }).waitFor({ timeout: T.long });
      assert.equal((await control(info, 'GET', '/hook')).received, before.received, 'a disabled sink delivered');
      await accessible(page, 'sinks with a disabled sink');
      await shot('10c-sink-disabled');
      await page.getByRole('button', { name: 'Enable sink captions-hook' }).click();
      await page.locator('#replay-status').getByText('Sink captions-hook is enabled').waitFor();
      for (let i = 0; i < 200; i++) {
        if ((await control(info, 'GET', '/hook')).received > before.received) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = await control(info, 'GET', '/hook');
      assert.ok(after.received > before.received, `the queued event was not delivered after Enable: ${JSON.stringify(after)}`);
      await row.getByText('Running').waitFor({ timeout: T.long });
      await shot('10d-sink-enabled');
    });

    await step('a failed delivery is listed with its error and attempts, replayed from its page, and applied once', async () => {
      const { id } = await control(info, 'POST', '/submit', { audio_url: info.audio_url, fail_apply: true });
      await page.getByRole('link', { name: 'Failed deliveries', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Failed deliveries' }).waitFor();
      const row = page.locator(`#failed-table tr[data-job="${id}"]`);
      await row.waitFor({ timeout: T.long }); // the list is read again every 5 s
      assert.match(await row.innerText(), /job\.success/);
      assert.equal(await row.locator('td[data-label="Attempts"]').innerText(), '2');
      assert.equal(await row.locator('td[data-label="Last error"]').innerText(), 'disk I/O error (refused by the test)');
      await accessible(page, 'failed deliveries');
      await shot('10e-failed-deliveries');
      await control(info, 'POST', '/apply', {}); // the cause, fixed
      const rowId = await row.getAttribute('data-id');
      await page.getByRole('button', { name: `Replay delivery ${rowId} of ${id}` }).click();
      await page.locator('#failed-status').getByText(`Delivery ${rowId}`).waitFor();
      assert.equal(await page.locator(`#failed-table tr[data-id="${rowId}"]`).count(), 0);
      // Applied once: the job is done, its record counting one delivery.
      const auth = { headers: { Authorization: `Bearer ${info.token}` } };
      let job = null;
      for (let i = 0; i < 200; i++) {
        job = await (await fetch(`${info.serve}/v1/jobs/${encodeURIComponent(id)}`, auth)).json();
        if (job.status === 'done') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(job.status, 'done', `the replayed delivery was not applied: ${JSON.stringify(job).slice(0, 200)}`);
      assert.equal(job.local.deliveries, 1);
      const left = await (await fetch(`${info.serve}/v1/inbox/failed?job_id=${encodeURIComponent(id)}`, auth)).json();
      assert.deepEqual(left, []);
      await shot('10f-failed-replayed');
    });

    await step('a job whose audio source is a javascript: URL shows it as text, not as a link', async () => {
      await page.evaluate((h) => { location.hash = h; }, `#/jobs/${encodeURIComponent(info.hostile_job)}`);
      await page.getByRole('heading', { level: 1, name: new RegExp(info.hostile_job) }).waitFor();
      const source = page.locator('#overview dt:text-is("Audio source") + dd');
      await source.waitFor();
      assert.equal(await source.innerText(), 'javascript:alert(1)');
      assert.equal(await source.locator('a').count(), 0, 'the javascript: source is a link');
      const links = await page.evaluate(() => [...document.querySelectorAll('a[href]')].map((a) => a.href));
      const foreign = links.filter((u) => !/^(https?|blob):/i.test(u));
      assert.deepEqual(foreign, [], 'links that are neither http, https nor blob');
      await accessible(page, 'job with a javascript: source');
      await shot('10b-job-hostile-source');
    });

    await step('every page is usable at 390 px: no sideways scrolling, labels, contrast (light and dark)', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      const enc = encodeURIComponent;
      for (const [name, hash, ready] of [
        ['jobs', '#/jobs', `tr[data-id="${jobId}"]`],
        ['job', `#/jobs/${enc(jobId)}`, '#transcript li'],
        ['job-speakers', `#/jobs/${enc(dialogueId)}`, '#speakers-revision:text-is("2")'],
        ['subtitles', `#/jobs/${enc(jobId)}/subtitles`, '#cue-metrics'],
        ['live', `#/live/${enc(sessionId)}`, '#finals li.final'],
        ['sinks', '#/sinks', '#sinks-table'],
        ['failed', '#/failed', '#no-failed, #failed-table'],
        ['search', `#/search?q=${enc(searchWord)}`, '#search-results li'],
      ]) {
        await page.evaluate((h) => { location.hash = h; }, hash);
        await page.locator(ready).first().waitFor();
        await page.waitForTimeout(300);
        await accessible(page, `${name} at 390 px`);
        await shot(`11-phone-${name}`);
        await page.emulateMedia({ colorScheme: 'dark' });
        await accessible(page, `${name} at 390 px, dark`);
        if (['job', 'job-speakers', 'live'].includes(name)) await shot(`12-phone-dark-${name}`);
        await page.emulateMedia({ colorScheme: 'light' });
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    });

    await step('keyboard: the skip link comes first, and the navigation is reachable', async () => {
      await page.goto(`${info.ui}?fresh=1#/jobs`); // a new document: focus starts at the top
      await page.getByRole('heading', { level: 1, name: 'Jobs' }).waitFor();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
      await page.keyboard.press('Enter');
      assert.equal(await page.evaluate(() => document.activeElement.id), 'main');
      assert.match(page.url(), /#\/jobs$/, 'the skip link changed the route');
      await page.goto(`${info.ui}?fresh=2#/jobs`);
      await page.getByRole('heading', { level: 1, name: 'Jobs' }).waitFor();
      const names = [];
      for (let i = 0; i < 8; i++) {
        await page.keyboard.press('Tab');
        names.push(await page.evaluate(() => document.activeElement.textContent.trim()));
      }
      for (const n of ['Jobs', 'Live', 'Sinks', 'Failed deliveries', 'Search', 'Sign out']) assert.ok(names.includes(n), `Tab never reached ${n}: ${names}`);
    });

    await step('signing out clears the session, and ends it on the server', async () => {
      const [kept] = await context.cookies(info.serve);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(/signed_out=1/);
      await page.getByText('Signed out.').waitFor();
      assert.equal((await context.cookies(info.serve)).length, 0);
      const status = await page.evaluate(async () => (await fetch('../v1/jobs')).status);
      assert.equal(status, 401);
      // A copy of the cookie, put back, reads nothing: the session is revoked, not only cleared.
      await context.addCookies([kept]);
      const copied = await page.evaluate(async () => (await fetch('../v1/jobs')).status);
      assert.equal(copied, 401, 'the cookie of a signed-out session still reads the API');
      await context.clearCookies();
    });

    await step('signing out everywhere ends the sessions of other browsers too', async () => {
      await page.goto(`${info.ui}login`);
      await page.getByLabel('Read API token').fill(info.token);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/ui\/.*#\/jobs/);
      // Another browser's session, signed in outside this one.
      const form = await fetch(`${info.serve}/ui/login`, {
        method: 'POST', redirect: 'manual', body: new URLSearchParams({ token: info.token }),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
      const other = form.headers.getSetCookie().map((c) => c.split(';')[0]).find((c) => c.startsWith('__Host-scribehook_ui='));
      assert.ok(other, `no session cookie from the sign-in: ${form.status}`);
      const reads = async () => (await fetch(`${info.serve}/v1/jobs`, { headers: { Cookie: other } })).status;
      assert.equal(await reads(), 200);
      await page.getByRole('button', { name: 'Sign out everywhere' }).click();
      await page.waitForURL(/signed_out=1/);
      assert.equal((await context.cookies(info.serve)).length, 0);
      assert.equal(await reads(), 401, 'the other browser is still signed in');
    });

    assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  } finally {
    if (context) await context.close().catch(() => {});
    await launcher.stop();
    const passed = results.filter(Boolean).length;
    console.log(`# ${passed}/${results.length} passed`);
    console.log(`# screenshots (${shots.length}) in ${path.relative(root, shotsDir)}/:`);
    for (const s of shots) console.log(`#   ${path.basename(s)}`);
  }
}

main().then(() => process.exit(0), (e) => {
  if (!results.includes(false)) console.error(e);
  process.exit(1);
});

package receiver

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// captionsPageHTML is the caption page, for an OBS browser source or a screen: the session's
// last lines in large white type on a transparent background. Its query tunes it: lines
// (1-20, default 2), size (CSS pixels, default 48), bg (a CSS colour without spaces, default
// transparent), partials=0 (finals only). NONCE is replaced per answer.
const captionsPageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>Live captions</title>
<style nonce="NONCE">
html, body { margin: 0; height: 100%; background: transparent; overflow: hidden; }
body { display: flex; flex-direction: column; justify-content: flex-end; }
#captions { padding: 0.4em 0.8em; color: #fff; font: 600 48px/1.25 system-ui, sans-serif;
  text-shadow: 0 0 4px #000, 0 0 4px #000, 2px 2px 2px #000; }
#captions p { margin: 0; }
#captions .partial { opacity: 0.75; }
</style>
</head>
<body>
<div id="captions" role="log" aria-live="polite"></div>
<script nonce="NONCE">
(() => {
  const q = new URLSearchParams(location.search);
  const box = document.getElementById("captions");
  const keep = Math.min(20, Math.max(1, parseInt(q.get("lines") || "2", 10) || 2));
  const size = Math.min(400, Math.max(8, parseInt(q.get("size") || "48", 10) || 48));
  const bg = q.get("bg") || "";
  box.style.fontSize = size + "px";
  if (/^[#a-zA-Z0-9(),.%]+$/.test(bg)) document.body.style.background = bg;
  const finals = [];
  let partial = null;
  const render = () => {
    const lines = finals.slice(-keep);
    if (partial) lines.push(partial);
    const shown = lines.slice(-keep);
    box.replaceChildren(...shown.map((l) => {
      const p = document.createElement("p");
      p.textContent = l.text;
      if (!l.final) p.className = "partial";
      return p;
    }));
  };
  const params = new URLSearchParams();
  for (const k of ["exp", "sig"]) if (q.get(k)) params.set(k, q.get(k));
  if (q.get("partials") === "0") params.set("partials", "0");
  const src = "captions/events" + (params.toString() ? "?" + params : "");
  // EventSource reconnects by itself after a dropped connection (Last-Event-ID resumes the
  // stream), but gives up for good on an answer other than 200 (a proxy's 502, a 503 while
  // the server restarts): then open a new one, backing off to 30 s. It starts from the first
  // message again, so every event at or before the last one shown is skipped.
  let lastSeq = 0;
  let wait = 1000;
  const onTranscript = (ev) => {
    let m;
    try { m = JSON.parse(ev.data); } catch { return; }
    if (typeof m.seq === "number") {
      if (m.seq <= lastSeq) return;
      lastSeq = m.seq;
    }
    const d = (m.payload && m.payload.data) || {};
    const text = ((d.utterance && d.utterance.text) || "").trim();
    if (d.is_final) {
      if (text) finals.push({ text, final: true });
      finals.splice(0, Math.max(0, finals.length - keep));
      partial = null;
    } else {
      partial = text ? { text, final: false } : null;
    }
    render();
  };
  const open = () => {
    const es = new EventSource(src);
    es.addEventListener("transcript", onTranscript);
    es.addEventListener("open", () => { wait = 1000; });
    es.addEventListener("error", () => {
      if (es.readyState !== EventSource.CLOSED) return;
      setTimeout(open, wait);
      wait = Math.min(wait * 2, 30000);
    });
  };
  open();
})();
</script>
</body>
</html>
`

// captionsPage is GET /v1/live/:id/captions.html: the caption page. It holds no data of the
// session; its script opens the session's transcript events with the page's own signature.
func (r *Receiver) captionsPage(c *fiber.Ctx) error {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("page nonce: %w", err)
	}
	nonce := base64.RawStdEncoding.EncodeToString(b[:])
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; connect-src 'self'; base-uri 'none'; form-action 'none'")
	// The page's URL carries its signature: no Referer may take it elsewhere.
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.SendString(strings.ReplaceAll(captionsPageHTML, "NONCE", nonce))
}

package receiver

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/store"
)

// subtitleTypes are the content types of the subtitle formats the pipeline renders.
var subtitleTypes = map[string]string{
	"srt":  "application/x-subrip; charset=utf-8",
	"vtt":  "text/vtt; charset=utf-8",
	"ttml": "application/ttml+xml; charset=utf-8",
	"ssa":  "text/x-ssa; charset=utf-8",
	"ass":  "text/x-ass; charset=utf-8",
	"stl":  "application/octet-stream",
}

// subtitles is GET /v1/jobs/:id/subtitles.:format[?lang=xx]: a stored subtitle artifact of the
// job, the transcript's language by default. The pipeline renders them when the job succeeds;
// `scribehook export` renders other variants on demand.
func (r *Receiver) subtitles(c *fiber.Ctx) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return writeError(c, fiber.StatusBadRequest, err.Error())
	}
	format, lang := strings.ToLower(c.Params("format")), c.Query("lang")
	rec, arts, ok, err := r.storedJob(c, id)
	if !ok {
		return err
	}
	if lang == "" {
		lang = api.TranscriptLanguage(rec.Job.Result)
	}
	var found *store.Artifact
	var have []string
	for i, a := range arts {
		if !strings.HasPrefix(a.Name, "subtitles") {
			continue
		}
		have = append(have, a.Format+"/"+a.Language)
		if a.Format == format && (a.Language == lang || lang == "" && found == nil) {
			found = &arts[i]
		}
	}
	if found == nil {
		sort.Strings(have)
		// The request's values are not quoted back; what the job has is.
		msg := "the job has no subtitles of that format and language"
		if len(have) > 0 {
			msg += " (it has: " + strings.Join(have, ", ") + ")"
		} else {
			msg += " (none rendered yet: the job has not succeeded, or subtitles are off)"
		}
		return writeError(c, fiber.StatusNotFound, msg)
	}
	content, err := os.ReadFile(found.Path)
	if err != nil {
		r.log.WithError(err).WithField("job_id", id).Error("read subtitle artifact")
		return writeError(c, fiber.StatusInternalServerError, "subtitle file unreadable: "+found.Name)
	}
	ct, ok := subtitleTypes[format]
	if !ok {
		ct = fiber.MIMEOctetStream
	}
	c.Set(fiber.HeaderContentType, ct)
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf("inline; filename=%q", found.Name))
	return c.Send(content)
}

package subtitles

import (
	"fmt"
	"strings"
)

// Format is a subtitle file format Render writes.
type Format string

// Formats go-astisub can write.
const (
	SRT  Format = "srt"
	VTT  Format = "vtt"
	TTML Format = "ttml"
	SSA  Format = "ssa"
	ASS  Format = "ass"
	STL  Format = "stl" // EBU STL, binary
)

// Formats lists every format Render writes, SRT and WebVTT first.
func Formats() []Format { return []Format{SRT, VTT, TTML, SSA, ASS, STL} }

// ParseFormat accepts a format name or file extension, case-insensitive ("webvtt" and
// "dfxp" are aliases of vtt and ttml).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), ".")); f {
	case SRT, VTT, TTML, SSA, ASS, STL:
		return f, nil
	case "webvtt":
		return VTT, nil
	case "dfxp", "xml":
		return TTML, nil
	}
	return "", fmt.Errorf("subtitles: unknown format %q", s)
}

// Extension is the file extension, with its dot.
func (f Format) Extension() string { return "." + string(f) }

// ContentType is the media type to serve the format with.
func (f Format) ContentType() string {
	switch f {
	case SRT:
		return "application/x-subrip; charset=utf-8"
	case VTT:
		return "text/vtt; charset=utf-8"
	case TTML:
		return "application/ttml+xml; charset=utf-8"
	case SSA:
		return "text/x-ssa; charset=utf-8"
	case ASS:
		return "text/x-ass; charset=utf-8"
	}
	return "application/octet-stream"
}

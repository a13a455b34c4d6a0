// Package subtitles is part of scribehook; see docs/design.md.
package subtitles

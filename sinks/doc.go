// Package sinks is part of scribehook; see docs/design.md.
package sinks

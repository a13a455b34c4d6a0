// Package handlers is part of scribehook; see docs/design.md.
package handlers

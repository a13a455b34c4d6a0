// Package store is part of scribehook; see docs/design.md.
package store

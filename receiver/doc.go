// Package receiver is part of scribehook; see docs/design.md.
package receiver

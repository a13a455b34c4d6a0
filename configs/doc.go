// Package configs is part of scribehook; see docs/design.md.
package configs

// Package docscheck holds the tests that keep what the documentation says about the code's
// shape true: docs/design.md's package table (which folder owns what, what it imports of ours,
// its layer) against the import graph `go list` reports, the README's layout table against
// the folders of the repository, and the Go identifiers and Markdown files that comments and
// docs name against the sources. A doc that states a graph nobody checks drifts with the next
// import; these tests fail on that import and say which row to change. The package has no code
// of its own.
package docscheck

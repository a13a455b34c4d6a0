// Package docscheck holds the tests that keep what the documentation says about the code's
// shape true: docs/design.md's package table (which folder owns what, what it imports of ours,
// its layer) against the import graph `go list` reports, and the README's layout table against
// the folders of the repository. A doc that states a graph nobody checks drifts with the next
// import; these tests fail on that import and say which row to change. The package has no code
// of its own.
package docscheck

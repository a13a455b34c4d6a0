//go:build race

package main

// Under -race the program is built with the race detector too, so that its own concurrency
// (handlers printing while requests are served) is checked end to end.
func init() { buildFlags = append(buildFlags, "-race") }

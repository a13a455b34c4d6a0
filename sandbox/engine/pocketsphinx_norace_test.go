//go:build pocketsphinx && !race

package engine

// raceEnabled relaxes timing targets: the race detector slows the Go side several times.
const raceEnabled = false

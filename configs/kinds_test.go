package configs

// The configuration's tests read sinks entries of every kind of the module, as the scribehook
// binary does: its kinds are linked here the way a program links them, by importing them.
import (
	_ "github.com/scribehook/scribehook/sinks"
	_ "github.com/scribehook/scribehook/sinks/natssink"
	_ "github.com/scribehook/scribehook/sinks/redissink"
)

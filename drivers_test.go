package scribehook

// The root package links the SQLite driver only; its tests and benchmarks also run the kit on
// PostgreSQL and on the brokers, as a program does, by importing them.
import (
	_ "github.com/scribehook/scribehook/store/postgres"
)

package main

// The binary links every store driver, bus driver and sink kind of the module, so that any
// configuration runs with it; a program built on the root package imports only those it uses.
import (
	_ "github.com/scribehook/scribehook/store/postgres"
	_ "github.com/scribehook/scribehook/store/sqlite"
)

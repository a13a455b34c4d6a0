package main

// The binary links every store driver, bus driver and sink kind of the module, so that any
// configuration runs with it; a program built on the root package links SQLite, the
// in-process bus and the file, webhook and log sinks, and imports the others it uses.
import (
	_ "github.com/scribehook/scribehook/handlers/natsbus"
	_ "github.com/scribehook/scribehook/handlers/redisbus"
	_ "github.com/scribehook/scribehook/sinks/blobsink"
	_ "github.com/scribehook/scribehook/sinks/natssink"
	_ "github.com/scribehook/scribehook/sinks/redissink"
	_ "github.com/scribehook/scribehook/store/postgres"
	_ "github.com/scribehook/scribehook/store/sqlite"
)

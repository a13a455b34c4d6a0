package main

// TestGeneratedServeConfigurationLoads checks a configuration for `scribehook serve`: it links
// the sink kinds the binary links (cmd/scribehook/drivers.go), as configs reads them from the
// registry.
import (
	_ "github.com/scribehook/scribehook/sinks"
	_ "github.com/scribehook/scribehook/sinks/natssink"
	_ "github.com/scribehook/scribehook/sinks/redissink"
)

package sinks

import (
	"bufio"
	"io"
)

// writeIndented writes compact JSON (its pieces one after the other) to w indented by two
// spaces and followed by a newline: the bytes a json.Encoder writes for the same value after
// json.Encoder.SetIndent("", "  ") (empty objects and arrays stay {} and []), produced as they
// are written instead of in a second buffer the size of the indented whole. A 2-hour result's
// event is megabytes of nested words; indenting it in memory cost several times its size.
func writeIndented(w io.Writer, compact ...[]byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var inString, escaped, needIndent bool
	depth := 0
	newline := func() {
		_ = bw.WriteByte('\n')
		for range depth {
			_, _ = bw.WriteString("  ")
		}
	}
	for _, part := range compact {
		for _, c := range part {
			if inString {
				_ = bw.WriteByte(c)
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
				}
				continue
			}
			if needIndent && c != '}' && c != ']' {
				needIndent = false
				depth++
				newline()
			}
			switch c {
			case '"':
				inString = true
				_ = bw.WriteByte(c)
			case '{', '[':
				// The indent waits for the first member, so that an empty one stays {} or [].
				needIndent = true
				_ = bw.WriteByte(c)
			case ',':
				_ = bw.WriteByte(c)
				newline()
			case ':':
				_, _ = bw.WriteString(": ")
			case '}', ']':
				if needIndent {
					needIndent = false
				} else {
					depth--
					newline()
				}
				_ = bw.WriteByte(c)
			default:
				_ = bw.WriteByte(c)
			}
		}
	}
	_ = bw.WriteByte('\n')
	return bw.Flush()
}

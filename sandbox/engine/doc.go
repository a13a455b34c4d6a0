// Package engine holds the speech engines of the sandbox behind one small interface.
package engine

package sqlite

import (
	"time"

	"github.com/scribehook/scribehook/store/internal/sqlcore"
)

// timeLayout has a fixed width for years 0000 to 9999 in UTC, so text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// core is sqlcore.Core under a name that makes the embedded field unexported: Store gets the
// contract's methods without an exported field of an internal type.
type core = sqlcore.Core

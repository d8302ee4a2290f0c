package store

import (
	"fmt"
	"time"
)

// SortableTime renders t so that byte order is time order: zero-padded Unix
// milliseconds. Index sort keys that hold deadlines or lease expiries use it.
func SortableTime(t time.Time) string { return fmt.Sprintf("%015d", t.UnixMilli()) }

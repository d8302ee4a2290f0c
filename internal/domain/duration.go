package domain

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes as a string such as "90s",
// "15m", "12h" or "7d". A bare JSON number is read as milliseconds, the unit
// Coopr's lease policies used, so documents exported from Coopr still load.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) String() string {
	td := time.Duration(d)
	if td != 0 && td%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(td/(24*time.Hour)), 10) + "d"
	}
	return td.String()
}

// MarshalJSON writes the canonical string form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts "Nd" as well as anything time.ParseDuration accepts,
// or a whole number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		var ms int64
		if err := json.Unmarshal(b, &ms); err != nil {
			return fmt.Errorf("a duration is a string such as \"30s\" or \"7d\", or whole milliseconds")
		}
		if ms < 0 {
			return fmt.Errorf("a duration cannot be negative")
		}
		*d = Duration(time.Duration(ms) * time.Millisecond)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ParseDuration reads "7d", "36h", "90s" or "0".
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration: use a whole number of days such as \"7d\"", s)
		}
		return Duration(time.Duration(n) * 24 * time.Hour), nil
	}
	td, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: use a form such as \"90s\", \"15m\", \"12h\" or \"7d\"", s)
	}
	if td < 0 {
		return 0, fmt.Errorf("%q is negative: a duration cannot be negative", s)
	}
	return Duration(td), nil
}

package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the module version (v1.2.0, or a pseudo-version the Go
	// toolchain derives from the revision), the version set with -ldflags
	// "-X github.com/heddle-io/heddle/internal/buildinfo.version=...", or
	// "devel" when neither says.
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from.
	Revision string `json:"revision,omitempty"`
	// RevisionTime is the commit's time.
	RevisionTime time.Time `json:"revisionTime,omitzero"`
	// Modified says the working tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built it.
	GoVersion string `json:"goVersion,omitempty"`
}

// version overrides the module version when set at link time.
var version = ""

// Read returns the running binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi, version)
}

// From reads bi (nil when the binary has none); override, when not empty,
// is the version set at link time and wins over the module's.
func From(bi *debug.BuildInfo, override string) Info {
	var in Info
	if bi != nil {
		in.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					in.RevisionTime = t.UTC()
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if override != "" {
		in.Version = override
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	return in
}

// Short names the build in one word, for a User-Agent or a backup's
// manifest: the version, with the revision's first 12 characters when the
// version says nothing more ("devel-0123456789ab"), and "+dirty" when the
// tree was modified.
func (in Info) Short() string {
	s := in.Version
	if s == "devel" && in.Revision != "" {
		s += "-" + shortRev(in.Revision)
	}
	if in.Modified {
		s += "+dirty"
	}
	return s
}

// String is the one line heddle version prints:
// "heddle v1.2.0 (revision 0123456789ab of 2026-11-27T21:00:00Z, modified; go1.26.0)".
func (in Info) String() string {
	var parts []string
	if in.Revision != "" {
		p := "revision " + shortRev(in.Revision)
		if !in.RevisionTime.IsZero() {
			p += " of " + in.RevisionTime.Format(time.RFC3339)
		}
		if in.Modified {
			p += ", modified"
		}
		parts = append(parts, p)
	} else {
		parts = append(parts, "no VCS revision recorded")
	}
	if in.GoVersion != "" {
		parts = append(parts, in.GoVersion)
	}
	return fmt.Sprintf("heddle %s (%s)", in.Version, strings.Join(parts, "; "))
}

// LogAttrs are the fields of a start-up log line, as slog key-value pairs.
func (in Info) LogAttrs() []any {
	attrs := []any{"version", in.Version, "revision", in.Revision, "modified", in.Modified}
	if !in.RevisionTime.IsZero() {
		attrs = append(attrs, "revisionTime", in.RevisionTime.Format(time.RFC3339))
	}
	return attrs
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

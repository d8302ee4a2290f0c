package buildinfo

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func setup(t *testing.T) *debug.BuildInfo {
	t.Helper()
	return &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/heddle-io/heddle", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-27T21:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
}

func TestFromReadsTheRevisionItsTimeAndModified(t *testing.T) {
	t.Parallel()
	in := From(setup(t), "")
	require.Equal(t, Info{
		Version: "devel", Revision: "0123456789abcdef0123456789abcdef01234567",
		RevisionTime: time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC), Modified: true, GoVersion: "go1.26.0",
	}, in)
	require.Equal(t, "devel-0123456789ab+dirty", in.Short())
	require.Equal(t, "heddle devel (revision 0123456789ab of 2026-11-27T21:00:00Z, modified; go1.26.0)", in.String())
}

func TestFromPrefersTheLinkTimeVersionThenTheModuleVersion(t *testing.T) {
	t.Parallel()
	bi := setup(t)
	bi.Main.Version = "v0.0.0-20261127210000-0123456789ab"
	bi.Settings = bi.Settings[:3] // clean tree
	in := From(bi, "")
	require.Equal(t, "v0.0.0-20261127210000-0123456789ab", in.Version)
	require.Equal(t, "v0.0.0-20261127210000-0123456789ab", in.Short())
	require.Equal(t, "v1.2.0", From(bi, "v1.2.0").Version)
}

func TestFromWithoutBuildInfoSaysSo(t *testing.T) {
	t.Parallel()
	in := From(nil, "")
	require.Equal(t, "devel", in.Short())
	require.Equal(t, "heddle devel (no VCS revision recorded)", in.String())
}

func TestReadReportsTheToolchainOfThisBinary(t *testing.T) {
	t.Parallel()
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	require.Equal(t, bi.GoVersion, Read().GoVersion)
}

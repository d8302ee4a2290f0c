//go:build tools

// Package dex pins the Dex release heddle's end-to-end sign-in test runs
// against (TestDexSignIn in cmd/heddle). It is a module of its own so that
// Dex's dependencies stay out of heddle's go.mod; scripts/dex.sh builds
// it. Dex v2.45.1's go.mod names the module without /v2, so the proxy
// serves the tag only as the pseudo-version of its commit (11d2eeb52b42),
// and `go install github.com/dexidp/dex/cmd/dex@<version>` refuses it for
// its replace directive: building inside this module, which requires Dex
// and the api/v2 module that directive pointed at, works.
package dex

import _ "github.com/dexidp/dex/cmd/dex"

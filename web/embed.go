// Package web holds the dashboard's static files (index.html, the ES
// modules and the style sheet), embedded for package internal/dashboard.
package web

import "embed"

// Files are the dashboard's files, at the root of the FS.
//
//go:embed index.html style.css favicon.svg *.js
var Files embed.FS

package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// KindScript is the catalog kind of script resources.
const KindScript Kind = "scripts"

// Script is a script resource: a named, versioned script that service
// actions run by name (Coopr's plugin resources), so that many services share
// one install script and a fix is a new version rather than an edit of every
// service. Each PUT of new content is a new version; versions never change.
type Script struct {
	Meta
	Content string `json:"content,omitempty"`
	// Size and SHA256 describe Content in answers (listings leave Content
	// out); what a client sends in them is ignored.
	Size   int    `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

func (*Script) EntityKind() Kind { return KindScript }

// MaxScriptBytes bounds a script's content. A version is one store item
// (DynamoDB's limit is 400 KB, with the catalog's head copy and keys), and
// a script that long belongs in an image or a package.
const MaxScriptBytes = 256 << 10

// The shell automator's fields that name a script resource, which the catalog
// reads to know which services refer to which scripts.
const (
	FieldScriptResource = "script_resource"
	FieldScriptVersion  = "script_version"
)

// Validate checks a script on its own.
func (s *Script) Validate() Problems {
	c := newChecker()
	c.meta(s.Meta)
	switch {
	case s.Content == "":
		c.add("content", CodeRequired, "is required: the script's text")
	case len(s.Content) > MaxScriptBytes:
		c.add("content", CodeOutOfRange, "is %d bytes; a script resource holds at most %d (256 KiB): ship what is longer in the node's image or a package, and keep the script that installs it", len(s.Content), MaxScriptBytes)
	case strings.IndexByte(s.Content, 0) >= 0:
		c.add("content", CodeInvalid, "holds a NUL byte; a script is text")
	case !utf8.ValidString(s.Content):
		c.add("content", CodeInvalid, "is not UTF-8 text; convert the file to UTF-8")
	}
	return c.result()
}

// Describe fills Size and SHA256 from Content.
func (s *Script) Describe() {
	sum := sha256.Sum256([]byte(s.Content))
	s.Size, s.SHA256 = len(s.Content), hex.EncodeToString(sum[:])
}

// ScriptRefs lists the script resources a service's actions name, by
// action, as "actions.<action>.fields.script_resource" paths.
func ScriptRefs(s *Service) map[string]string {
	out := map[string]string{}
	for a, act := range s.Actions {
		if name := act.Fields[FieldScriptResource]; name != "" {
			out["actions."+string(a)+".fields."+FieldScriptResource] = name
		}
	}
	return out
}

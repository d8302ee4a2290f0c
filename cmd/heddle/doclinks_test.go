package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	// mdLink is a Markdown link or image: [text](target) or ![alt](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// docPath is a path to a document or example named in prose or in a
	// comment (the kind a reader copies): docs/..., scripts/..., a top-level
	// file of the repository.
	docPath = regexp.MustCompile("(?:^|[\\s`'\"(])((?:docs|scripts|infra|localstack)/[A-Za-z0-9_./-]+\\.(?:md|yaml|yml|sh|json))")
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// TestDocLinksResolve: every relative link in README.md and docs/ points to
// a file that exists (and, with #anchor, to a heading of that Markdown
// file), and every repository path a document or example names exists.
// A reader who follows one should never find nothing there.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files := []string{filepath.Join(root, "README.md")}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".yaml")) {
			files = append(files, p)
		}
		return nil
	}))
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		a := map[string]bool{}
		seen := map[string]int{}
		for _, m := range heading.FindAllStringSubmatch(stripCodeBlocks(string(b)), -1) {
			slug := githubSlug(m[1])
			if n := seen[slug]; n > 0 {
				a[slug+"-"+strconv.Itoa(n)] = true
			} else {
				a[slug] = true
			}
			seen[slug]++
		}
		anchors[path] = a
		return a
	}

	checked := 0
	var problems []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		text := string(b)
		rel, _ := filepath.Rel(root, file)
		if strings.HasSuffix(file, ".md") {
			for _, m := range mdLink.FindAllStringSubmatch(stripCodeBlocks(text), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(resolved); err != nil {
						problems = append(problems, rel+" links to "+target+", which does not exist")
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") {
					if !anchorsOf(resolved)[anchor] {
						problems = append(problems, rel+" links to "+target+": no heading of "+filepath.Base(resolved)+" has that anchor")
					}
				}
				checked++
			}
		}
		for _, m := range docPath.FindAllStringSubmatch(text, -1) {
			target := strings.TrimRight(m[1], ".")
			_, fromRoot := os.Stat(filepath.Join(root, target))
			_, fromDoc := os.Stat(filepath.Join(filepath.Dir(file), target))
			if fromRoot != nil && fromDoc != nil {
				problems = append(problems, rel+" names "+target+", which does not exist (from the repository's root or from the document)")
			}
			checked++
		}
	}
	require.Empty(t, problems)
	require.Greater(t, checked, 20, "the pattern found the links it should")
}

// stripCodeBlocks blanks fenced code blocks, whose brackets and # lines
// are shell and YAML, not links or headings.
func stripCodeBlocks(s string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			b.WriteString("\n")
			continue
		}
		if in {
			b.WriteString("\n")
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// githubSlug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces to dashes.
func githubSlug(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

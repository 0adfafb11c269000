// Command doclinks checks the links between the project's Markdown files:
// every relative link names a file that exists, and every #anchor a
// heading of the file it points into, as GitHub renders it. It reads the
// files given (folders: their *.md files) and exits 1, listing each broken
// link with its file and line, if any is broken. Links to other sites are
// not followed.
//
//	go run ./hack/doclinks README.md docs charts/troupe/README.md
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: doclinks FILE_OR_FOLDER...")
		os.Exit(2)
	}
	files, err := markdownFiles(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	broken, err := check(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, b := range broken {
		fmt.Println(b)
	}
	if len(broken) > 0 {
		fmt.Printf("broken links: %d\n", len(broken))
		os.Exit(1)
	}
}

// markdownFiles expands folders to the *.md files directly in them.
func markdownFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, a)
			continue
		}
		found, err := filepath.Glob(filepath.Join(a, "*.md"))
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	return files, nil
}

// link is one Markdown link of a file.
type link struct {
	line   int
	target string
}

// inlineLink matches [text](target) and ![alt](target), the target up to
// the first space or closing parenthesis (a title after a space is
// allowed and ignored).
var inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// parse returns a Markdown document's links and the anchors of its
// headings, leaving out what lies in fenced code blocks and code spans.
func parse(doc string) (links []link, anchors map[string]bool) {
	anchors = map[string]bool{}
	seen := map[string]int{}
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if title, ok := heading(line); ok {
			slug := Slug(title)
			// GitHub numbers a repeated heading's anchor: s, s-1, s-2.
			if k := seen[slug]; k > 0 {
				anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range inlineLink.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			links = append(links, link{line: n, target: m[1]})
		}
	}
	return links, anchors
}

// heading returns the text of an ATX heading line (# to ######).
func heading(line string) (string, bool) {
	hashes := len(line) - len(strings.TrimLeft(line, "#"))
	if hashes == 0 || hashes > 6 || len(line) == hashes || line[hashes] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[hashes:]), "#")), true
}

// codeSpan matches inline code, whose brackets are not links.
var codeSpan = regexp.MustCompile("`[^`]*`")

func withoutCodeSpans(line string) string {
	return codeSpan.ReplaceAllString(line, "")
}

// markup matches a link in a heading, which keeps only its text in the
// anchor (emphasis and code marks are dropped by Slug's filter).
var markup = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// Slug is the anchor GitHub gives a heading: lower case, letters, numbers,
// hyphens and underscores kept, spaces made hyphens, everything else
// dropped.
func Slug(title string) string {
	title = markup.ReplaceAllString(title, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// check returns a line for each broken link of files: a relative path
// that does not exist, or an anchor that is not a heading of the
// Markdown file it points into.
func check(files []string) ([]string, error) {
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		_, a := parse(string(raw))
		anchorsOf[path] = a
		return a, nil
	}
	var broken []string
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		links, _ := parse(string(raw))
		for _, l := range links {
			if problem := checkLink(file, l.target, anchors); problem != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", file, l.line, l.target, problem))
			}
		}
	}
	return broken, nil
}

// checkLink says what is wrong with target, a link of file, or "".
func checkLink(file, target string, anchors func(string) (map[string]bool, error)) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	resolved := file
	if path != "" {
		resolved = filepath.Join(filepath.Dir(file), path)
		if _, err := os.Stat(resolved); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(resolved, ".md") {
		return ""
	}
	a, err := anchors(resolved)
	if err != nil {
		return err.Error()
	}
	if !a[anchor] {
		return fmt.Sprintf("no heading with the anchor %q in %s", anchor, resolved)
	}
	return ""
}

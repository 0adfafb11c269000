package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"How it measures", "how-it-measures"},
		{"S3's cycles with the tasks in a slice (2026-11-27, late night)", "s3s-cycles-with-the-tasks-in-a-slice-2026-11-27-late-night"},
		{"A gang's binds sent together, answered apart (2026-11-28, 13:00 UTC)", "a-gangs-binds-sent-together-answered-apart-2026-11-28-1300-utc"},
		{"Topology: T against T0", "topology-t-against-t0"},
		{"`--bind-workers` and **binds** in flight", "--bind-workers-and-binds-in-flight"},
		{"S4x4 / S4 ≤ 1.25× at 5 µs", "s4x4--s4--125-at-5-µs"},
		{"See [the goals](#the-goals) first", "see-the-goals-first"},
		{"snake_case stays", "snake_case-stays"},
	} {
		t.Run(tc.title, func(t *testing.T) {
			if got := Slug(tc.title); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.title, got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	doc := "# Title\n" +
		"See [the goals](#the-goals) and [install](install.md#helm).\n" +
		"## The goals\n" +
		"```sh\n" +
		"echo [not](a-link.md)\n" +
		"## not a heading\n" +
		"```\n" +
		"Code `[x](y.md)` is not a link; ![a picture](img/p.png \"its title\") is.\n" +
		"## The goals\n" +
		"#hashtag is not a heading\n"
	links, anchors := parse(doc)
	wantLinks := []link{{2, "#the-goals"}, {2, "install.md#helm"}, {8, "img/p.png"}}
	if !reflect.DeepEqual(links, wantLinks) {
		t.Errorf("links = %+v, want %+v", links, wantLinks)
	}
	wantAnchors := map[string]bool{"title": true, "the-goals": true, "the-goals-1": true}
	if !reflect.DeepEqual(anchors, wantAnchors) {
		t.Errorf("anchors = %v, want %v", anchors, wantAnchors)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("docs/install.md", "# Install\n## Helm\n")
	write("examples/job.yaml", "kind: TFJob\n")
	readme := write("README.md", "# Troupe\n"+
		"[ok](docs/install.md#helm) [ok file](examples/job.yaml) [ok here](#troupe) [web](https://example.com/x#y)\n"+
		"[missing file](docs/nothing.md)\n"+
		"[missing anchor](docs/install.md#kustomize)\n"+
		"[missing here](#nowhere)\n")
	got, err := check([]string{readme})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		readme + ":3: docs/nothing.md: no such file",
		readme + ":4: docs/install.md#kustomize: no heading with the anchor \"kustomize\" in " + filepath.Join(dir, "docs/install.md"),
		readme + ":5: #nowhere: no heading with the anchor \"nowhere\" in " + readme,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("check =\n%q\nwant\n%q", got, want)
	}
}

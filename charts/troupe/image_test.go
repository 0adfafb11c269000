package troupe_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ml/troupe/internal/testutil"
)

// The chart runs what the image holds: every Deployment's command is a
// binary the Dockerfile's final stage copies in, built by
// hack/build-binaries.sh (what `make image-binaries` runs), and the image's
// user is the one the chart's securityContext runs as.
func TestImageHoldsTheChartsCommands(t *testing.T) {
	f, err := os.Open(filepath.Join(testutil.RepoRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var stages int
	var buildsWithScript bool
	var copied []string
	var user string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "FROM":
			// Only the last stage's files and user are the image's.
			stages++
			copied, user = nil, ""
		case "COPY":
			if len(fields) == 4 && strings.HasPrefix(fields[1], "--from=") {
				copied = append(copied, fields[3])
			}
		case "USER":
			user = fields[1]
		}
		if strings.Contains(s.Text(), "hack/build-binaries.sh /out") {
			buildsWithScript = true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if stages < 2 || !buildsWithScript {
		t.Fatalf("Dockerfile: want a build stage that runs hack/build-binaries.sh /out and a runtime stage; found %d stages, script used: %v", stages, buildsWithScript)
	}

	r := render(t)
	for _, name := range []string{operatorName, schedulerName} {
		pod := deployment(t, r, name).Spec.Template.Spec
		cmd := pod.Containers[0].Command
		if len(cmd) != 1 || !slices.Contains(copied, cmd[0]) {
			t.Errorf("%s runs %v; the image holds %v", name, cmd, copied)
		}
		sc := pod.SecurityContext
		if sc == nil || sc.RunAsUser == nil || sc.RunAsGroup == nil {
			t.Fatalf("%s: no runAsUser and runAsGroup", name)
		}
		if want := strconv.FormatInt(*sc.RunAsUser, 10) + ":" + strconv.FormatInt(*sc.RunAsGroup, 10); user != want {
			t.Errorf("the image's USER is %q, the chart runs %s as %s", user, name, want)
		}
	}
}

package demo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/troupe-ml/troupe/internal/localcluster"
)

// The state folder's layout.
const (
	pidFile        = "demo.pid"
	kubeconfigFile = "kubeconfig"
	logsDir        = "logs"
)

// prepareStateDir makes the state folder ready for a new cluster: it
// refuses if another demo is running on it, stops what a killed demo left
// running there, and empties it (keeping nothing from the last run but
// the folder).
func prepareStateDir(dir string, note func(string)) error {
	if raw, err := os.ReadFile(filepath.Join(dir, pidFile)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid != os.Getpid() && localcluster.ProcessAlive(pid, "demo") {
			return fmt.Errorf("another demo (pid %d) is running on %s: stop it with Ctrl-C, or pass --state-dir", pid, dir)
		}
	}
	if n := killLeftovers(dir); n > 0 {
		note(fmt.Sprintf("stopped %d processes an earlier demo left running on %s", n, dir))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("empty the state folder: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// demoBinaries are the programs the demo starts; a leftover one is found by
// its name and the state folder on its command line.
var demoBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}

// killLeftovers kills the control-plane and kwok processes that run on the
// state folder, found by their command line; it returns how many.
func killLeftovers(dir string) int { return localcluster.KillLeftovers(dir, demoBinaries) }

// cleanStateDir removes everything in the state folder but the logs.
func cleanStateDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == logsDir {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

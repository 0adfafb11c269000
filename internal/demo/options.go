// Package demo is `make demo`: a local cluster on one machine, from Go
// modules only. It starts etcd and kube-apiserver (envtest),
// kube-controller-manager and kwok as subprocesses, registers simulated
// CPU and GPU nodes, runs the operator and troupe-scheduler in-process,
// applies the examples, and shows where every job's pods run until
// interrupted. With --until-running it is the CI smoke test instead.
package demo

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-ml/troupe/gangscheduler/config"
)

// modulePath identifies the repository root, where config/ and examples/
// are read from and hack/ builds the binaries.
const modulePath = "github.com/troupe-ml/troupe"

// DefaultExamples are the manifests the demo applies, relative to the
// repository root.
var DefaultExamples = []string{
	"examples/tfjob-mixed.yaml",
	"examples/pytorchjob-gpu.yaml",
	"examples/mpijob-mixed.yaml",
	TopologyExample,
}

// TopologyExample is the default example whose gang the demo's check
// verifies against its topology rule: one block, two racks of four.
const TopologyExample = "examples/pytorchjob-topology.yaml"

// GangRestartExample is the job --show-gang-restart applies once the
// examples run, and restarts as a whole gang.
const GangRestartExample = "examples/pytorchjob-gang-restart.yaml"

// Options are the demo's settings, one per flag.
type Options struct {
	StateDir            string
	ControlPlaneDir     string
	KwokDir             string
	CRDDir              string
	Examples            []string
	CPUNodes            int
	GPUNodes            int
	UntilRunning        bool
	Timeout             time.Duration
	Refresh             time.Duration
	NoControllerManager bool
	ShowGangRestart     bool
	// SchedulerConfig is troupe-scheduler's --config, e.g. to turn the
	// preempt action on.
	SchedulerConfig string

	// gangExample is GangRestartExample resolved, with --show-gang-restart.
	gangExample string

	// repoRoot is where relative defaults are resolved; found from the
	// working directory.
	repoRoot string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		StateDir: filepath.Join(os.TempDir(), "troupe-demo"),
		Examples: append([]string(nil), DefaultExamples...),
		CPUNodes: 3,
		GPUNodes: 8,
		Timeout:  3 * time.Minute,
		Refresh:  time.Second,

		ShowGangRestart: true,
	}
}

// BindFlags registers the options on a flag set.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.StateDir, "state-dir", o.StateDir, "Folder for the cluster's state: kubeconfig, etcd data, certificates and logs/. Emptied at start and on exit, except logs/.")
	fs.StringVar(&o.ControlPlaneDir, "control-plane-dir", o.ControlPlaneDir, "Folder with etcd, kube-apiserver and kube-controller-manager (default: $KUBEBUILDER_ASSETS, else the output of hack/controlplane.sh).")
	fs.StringVar(&o.KwokDir, "kwok-dir", o.KwokDir, "Folder with kwok and stages/*.yaml (default: the output of hack/kwok.sh).")
	fs.StringVar(&o.CRDDir, "crd-dir", o.CRDDir, "Folder of the CRDs to install (default: config/crd/bases of the repository).")
	fs.Func("examples", fmt.Sprintf("Comma-separated manifests to apply once the cluster is up; empty applies none (default %q).", strings.Join(DefaultExamples, ",")), func(v string) error {
		o.Examples = nil
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				o.Examples = append(o.Examples, f)
			}
		}
		return nil
	})
	fs.IntVar(&o.CPUNodes, "cpu-nodes", o.CPUNodes, "Simulated CPU-only nodes (16 CPU, 64Gi, label node-pool=cpu).")
	fs.IntVar(&o.GPUNodes, "gpu-nodes", o.GPUNodes, "Simulated GPU nodes (32 CPU, 256Gi, 8 nvidia.com/gpu, label node-pool=gpu, taint nvidia.com/gpu=present:NoSchedule), in racks of 2 and blocks of 2 racks (labels topology.example.com/rack and /block).")
	fs.BoolVar(&o.UntilRunning, "until-running", o.UntilRunning, "Smoke test: exit 0 once every example job's pods run on the right kind of node (GPU pods on GPU nodes, the others on CPU nodes) and every gang is Running, and with --show-gang-restart once the restarted job is back as generation 1; exit 1 on a misplaced pod, a failed job, or at --timeout.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "With --until-running: how long to wait for the cluster, the examples and the gang restart.")
	fs.DurationVar(&o.Refresh, "refresh", o.Refresh, "How often the table is redrawn.")
	fs.BoolVar(&o.ShowGangRestart, "show-gang-restart", o.ShowGangRestart, "Once the examples run, apply "+GangRestartExample+" (restartPolicy Gang), fail one of its workers with exit code 137 through kwok's chaos stage, and show the operator restart the whole gang as generation 1; --until-running then also waits for that restart. The job is deleted a while after the restart, giving its GPUs back.")
	fs.StringVar(&o.SchedulerConfig, "scheduler-config", o.SchedulerConfig, "troupe-scheduler's configuration (its --config: actions and plugins, YAML; see config/samples/scheduler-config.yaml), e.g. to turn preemption on. Default: the scheduler's own.")
	fs.BoolVar(&o.NoControllerManager, "no-controller-manager", o.NoControllerManager, "Do not run kube-controller-manager: the demo removes the nodes' not-ready taints itself, and nothing garbage-collects a deleted job's pods.")
}

// Validate reports every invalid option, naming the flag.
func (o *Options) Validate() error {
	var errs []error
	if o.StateDir == "" {
		errs = append(errs, errors.New("--state-dir: must not be empty"))
	}
	if o.CPUNodes < 0 || o.GPUNodes < 0 {
		errs = append(errs, fmt.Errorf("--cpu-nodes, --gpu-nodes: must not be negative, got %d and %d", o.CPUNodes, o.GPUNodes))
	}
	if o.CPUNodes+o.GPUNodes == 0 {
		errs = append(errs, errors.New("--cpu-nodes, --gpu-nodes: at least one node is needed"))
	}
	if o.UntilRunning && o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout: must be greater than 0 with --until-running, got %v", o.Timeout))
	}
	if o.UntilRunning && len(o.Examples) == 0 {
		errs = append(errs, errors.New("--until-running: needs at least one manifest in --examples to wait for"))
	}
	if o.ShowGangRestart && o.GPUNodes == 0 {
		errs = append(errs, fmt.Errorf("--show-gang-restart: the job it restarts (%s) runs on GPU nodes; pass --gpu-nodes of at least 1, or --show-gang-restart=false", GangRestartExample))
	}
	if o.SchedulerConfig != "" {
		if _, err := config.Load(o.SchedulerConfig); err != nil {
			errs = append(errs, fmt.Errorf("--scheduler-config %s: %w", o.SchedulerConfig, err))
		}
	}
	if o.Refresh < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--refresh: must be at least 100ms, got %v", o.Refresh))
	}
	return errors.Join(errs...)
}

// ParseFlags parses and validates the demo's flags.
func ParseFlags(args []string, stderr io.Writer) (*Options, error) {
	o := NewOptions()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("invalid flags:\n%w", err)
	}
	abs, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	o.StateDir = abs
	return o, nil
}

// resolve fills in the defaults that depend on the repository: the CRD
// folder, the examples, and the binaries (built by the hack/ scripts when
// no flag or environment names them; their progress goes to stderr).
func (o *Options) resolve(stderr io.Writer) error {
	if o.CRDDir == "" || o.ControlPlaneDir == "" || o.KwokDir == "" || hasRelative(o.Examples) || o.ShowGangRestart {
		root, err := findRepoRoot()
		if err != nil {
			return err
		}
		o.repoRoot = root
	}
	if o.CRDDir == "" {
		o.CRDDir = filepath.Join(o.repoRoot, "config", "crd", "bases")
	}
	for i, f := range o.Examples {
		if !filepath.IsAbs(f) {
			if _, err := os.Stat(f); err != nil && o.repoRoot != "" {
				f = filepath.Join(o.repoRoot, f)
			}
			abs, err := filepath.Abs(f)
			if err != nil {
				return err
			}
			o.Examples[i] = abs
		}
	}
	if o.ShowGangRestart {
		// The repository's copy, even when the working directory has a
		// file of that name.
		o.gangExample = filepath.Join(o.repoRoot, GangRestartExample)
	}
	if o.ControlPlaneDir == "" {
		o.ControlPlaneDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	var err error
	if o.ControlPlaneDir == "" {
		if o.ControlPlaneDir, err = runHack(o.repoRoot, "controlplane.sh", stderr); err != nil {
			return err
		}
	}
	if o.KwokDir == "" {
		if o.KwokDir, err = runHack(o.repoRoot, "kwok.sh", stderr); err != nil {
			return err
		}
	}
	var missing []string
	for _, bin := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if !executable(filepath.Join(o.ControlPlaneDir, bin)) && (bin != "kube-controller-manager" || !o.NoControllerManager) {
			missing = append(missing, filepath.Join(o.ControlPlaneDir, bin))
		}
	}
	if !executable(filepath.Join(o.KwokDir, "kwok")) {
		missing = append(missing, filepath.Join(o.KwokDir, "kwok"))
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing binaries: %s (build them with hack/controlplane.sh and hack/kwok.sh, or run `make demo`)", strings.Join(missing, ", "))
	}
	return nil
}

func hasRelative(files []string) bool {
	for _, f := range files {
		if !filepath.IsAbs(f) {
			return true
		}
	}
	return false
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// findRepoRoot walks up from the working directory to the go.mod of this
// module.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run the demo inside the %s repository (no go.mod of that module above the working directory), or pass --crd-dir, --control-plane-dir, --kwok-dir, absolute --examples and --show-gang-restart=false", modulePath)
		}
		dir = parent
	}
}

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// runHack runs one of the repository's build scripts, which print the
// folder they built into.
func runHack(root, script string, stderr io.Writer) (string, error) {
	cmd := exec.Command(filepath.Join(root, "hack", script))
	cmd.Dir = root
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// Package cmdutil is what Troupe's binaries share around their own code:
// flag parsing with validation, the kubeconfig rules, and exit codes.
package cmdutil

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Options are a binary's settings, one per flag.
type Options interface {
	BindFlags(fs *flag.FlagSet)
	// Validate reports every invalid option, naming the flag.
	Validate() error
}

// ParseFlags parses args into opts and zap's logging flags, validates them
// and installs the logger. The error names every invalid flag.
func ParseFlags(name string, args []string, stderr io.Writer, opts Options) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts.BindFlags(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("invalid flags:\n%w", err)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	return nil
}

// LoadKubeconfig reads the kubeconfig a flag names, or else follows
// controller-runtime's rules: $KUBECONFIG, in-cluster, ~/.kube/config.
func LoadKubeconfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return ctrlconfig.GetConfig()
}

// Parsed is a binary's parsed options: they name the kubeconfig to use.
type Parsed interface {
	KubeconfigPath() string
}

// Main runs a binary and returns its exit code: 2 when parse fails (bad
// flags or configuration; nothing has touched a cluster), 1 when the
// kubeconfig cannot be loaded or run fails.
func Main[O Parsed](ctx context.Context, name string, args []string, stderr io.Writer,
	parse func([]string, io.Writer) (O, error), run func(context.Context, *rest.Config, O) error) int {
	opts, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	cfg, err := LoadKubeconfig(opts.KubeconfigPath())
	if err != nil {
		fmt.Fprintf(stderr, "load kubeconfig: %v\n", err)
		return 1
	}
	if err := run(ctx, cfg, opts); err != nil {
		fmt.Fprintf(stderr, "%s stopped: %v\n", name, err)
		return 1
	}
	return 0
}

// SplitList splits a comma-separated flag value into its items, trimmed,
// leaving out empty ones ("a, b,,c" is a, b, c).
func SplitList(list string) []string {
	var out []string
	for _, it := range strings.Split(list, ",") {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

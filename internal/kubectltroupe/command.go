// Package kubectltroupe is kubectl-troupe, the kubectl plugin that says
// what became of a Troupe job's gang and why it waits (status), and where
// troupe-scheduler would place a job now (fit). kubectl runs it as
// `kubectl troupe` once the binary is on the PATH.
package kubectltroupe

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCommand is `kubectl troupe` with its subcommands, and kubectl's
// connection flags (--kubeconfig, --context, -n, ...).
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:          "kubectl-troupe",
		Short:        "What became of Troupe's jobs and their gangs, and where a job would go now",
		SilenceUsage: true,
		// kubectl runs it as `kubectl troupe`: its help says so.
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl troupe"},
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newStatusCommand(flags, streams), newFitCommand(flags, streams))
	return cmd
}

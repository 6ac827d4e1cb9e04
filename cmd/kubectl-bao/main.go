// Command kubectl-bao is the kubectl plugin `kubectl bao` (docs/kubectl-bao.md): put
// it on PATH and run `kubectl bao --help`. The commands live in
// internal/cli/kubectlbao; this is only the process around them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/baokeeper/baokeeper/internal/cli/kubectlbao"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := kubectlbao.NewRootCommand(kubectlbao.Options{
		Streams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
	})
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if errors.Is(err, kubectlbao.ErrWaitTimeout) {
			// kubectl bao wait: 2 tells a pipeline "not yet" from "failed".
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// Command rig runs baokeeper's local test rig.
//
//	rig netns-run [--name N] [--forward 127.0.0.1:16443] -- CMD...   run CMD in a fresh network namespace
//	rig up --dir D [--bin-dir bin/k8s-1.37.2] [--images test/rig/images.txt] [--oci-layouts dist/oci] [--favor-images PREFIX,...]   start the rig (inside the namespace)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/baokeeper/baokeeper/test/rig"
	"github.com/baokeeper/baokeeper/test/rig/nodeagent"
	"github.com/baokeeper/baokeeper/test/rig/s3server"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == nodeagent.PodExecArg {
		nodeagent.PodExecMain(os.Args[2:])
		return
	}
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "s3":
		err = s3(os.Args[2:])
	case "netns-run":
		var code int
		code, err = netnsRun(os.Args[2:])
		if err == nil {
			os.Exit(code)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rig: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: rig up --dir DIR | rig s3 --dir DIR --bin S3_BIN --bucket B | rig netns-run [--name N] [--forward ADDR] -- CMD...")
	os.Exit(2)
}

func logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintf(os.Stderr, "[rig %s] %s %s\n", time.Now().Format("15:04:05"), prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// s3 runs the rig's S3 server (test/rig/s3server) until SIGINT or SIGTERM; DIR/ready
// appears once the buckets exist and an object can be written. Inside the rig's
// network namespace only: it listens on 127.0.0.1, which pods share.
func s3(args []string) error {
	fs := flag.NewFlagSet("s3", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the server's data and logs")
	bin := fs.String("bin", "", "the S3 server binary (bin/s3server-<hash>)")
	bucket := fs.String("bucket", "snapshots", "bucket to create")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *bin == "" {
		return errors.New("--dir and --bin are required")
	}
	if err := rig.RequireInsideNetns(); err != nil {
		return fmt.Errorf("rig s3 runs inside the rig's network namespace: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := s3server.Start(startCtx, *bin, *dir, *bucket)
	if err != nil {
		return err
	}
	defer srv.Stop()
	if err := os.WriteFile(filepath.Join(*dir, "ready"), []byte(srv.Endpoint+"\n"), 0o644); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the rig's state and logs")
	binDir := fs.String("bin-dir", "bin/k8s-1.37.2", "directory with etcd and the Kubernetes binaries")
	images := fs.String("images", "test/rig/images.txt", "image map file")
	layouts := fs.String("oci-layouts", "dist/oci", "comma-separated OCI image layouts searched before the image map (make image writes dist/oci); a missing one is skipped")
	root := fs.String("root", ".", "repository root that relative paths are resolved from")
	favor := fs.String("favor-images", "", "comma-separated image prefixes whose containers run at a higher CPU priority (nice -5) than the rig's other processes, as members with CPU of their own would")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(*root, p)
	}
	rootAbs, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	imageMap, err := rig.LoadImageMap(abs(*images), rootAbs)
	if err != nil {
		return err
	}
	unlock, err := lockRig()
	if err != nil {
		return err
	}
	defer unlock()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	binAbs, err := filepath.Abs(abs(*binDir))
	if err != nil {
		return err
	}
	var layoutDirs []string
	for _, l := range strings.Split(*layouts, ",") {
		if l = strings.TrimSpace(l); l != "" {
			layoutDirs = append(layoutDirs, abs(l))
		}
	}
	var favored []string
	for _, p := range strings.Split(*favor, ",") {
		if p = strings.TrimSpace(p); p != "" {
			favored = append(favored, p)
		}
	}
	return runRig(ctx, *dir, binAbs, imageMap, layoutDirs, favored, logger())
}

// runRig starts the control plane and the node agent, writes dir/ready, and runs until
// ctx ends; then it stops the pods first and the control plane after them.
func runRig(ctx context.Context, dir, binDir string, imageMap map[string]string, layouts, favored []string, log logr.Logger) error {
	start := time.Now()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	log.Info("Starting control plane", "dir", dir)
	cp, err := rig.StartControlPlane(ctx, binDir, dir)
	if err != nil {
		return err
	}
	defer cp.Stop()
	log.Info("Control plane ready", "elapsed", time.Since(start).Round(time.Millisecond).String())

	agentCtx, stopAgent := context.WithCancel(context.WithoutCancel(ctx))
	agentDone := make(chan error, 1)
	go func() {
		cfg := cp.NodeAgentConfig([]string{"rig-node-1", "rig-node-2", "rig-node-3"},
			filepath.Join(dir, "nodes"), imageMap, log.WithName("nodeagent"))
		cfg.ImageLayouts, cfg.FavorImages = layouts, favored
		agentDone <- nodeagent.Run(agentCtx, cfg)
	}()
	defer func() {
		stopAgent()
		select {
		case err := <-agentDone:
			if err != nil {
				log.Error(err, "Node agent stopped with an error")
			}
		case <-time.After(90 * time.Second):
			log.Info("Node agent did not stop within 90 s")
		}
		removeCreatedMountPoints(filepath.Join(dir, "nodes", "created-mountpoints.txt"), log)
	}()

	if err := os.WriteFile(filepath.Join(dir, rig.ReadyFile), []byte(time.Now().UTC().Format(time.RFC3339)), 0o600); err != nil {
		return err
	}
	log.Info("Rig ready", "kubeconfig", cp.Kubeconfig(), "elapsed", time.Since(start).Round(time.Millisecond).String())
	select {
	case <-ctx.Done():
		log.Info("Stopping rig")
		return nil
	case err := <-agentDone:
		agentDone <- err
		return fmt.Errorf("node agent stopped: %w", err)
	}
}

// netnsRun creates a network namespace, runs the command inside it, and deletes the
// namespace when the command ends or the rig is interrupted.
func netnsRun(args []string) (int, error) {
	fs := flag.NewFlagSet("netns-run", flag.ContinueOnError)
	name := fs.String("name", fmt.Sprintf("baokeeper-rig-%d", os.Getpid()), "network namespace name")
	forward := fs.String("forward", "", "host loopback address (e.g. 127.0.0.1:16443) forwarded to the API server inside")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return 0, errors.New("netns-run needs a command after --")
	}
	ns, err := rig.CreateNetns(*name, rig.APIServerIP+"/32")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := nodeagent.DeletePodNetns(); err != nil {
			fmt.Fprintf(os.Stderr, "rig: %v\n", err)
		}
		if err := nodeagent.DeleteClockFiles(); err != nil {
			fmt.Fprintf(os.Stderr, "rig: %v\n", err)
		}
		if err := ns.Delete(); err != nil {
			fmt.Fprintf(os.Stderr, "rig: failed to delete network namespace %s: %v\n", ns.Name, err)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *forward != "" {
		go func() {
			if err := ns.Forward(ctx, *forward, fmt.Sprintf("%s:6443", rig.APIServerIP)); err != nil {
				fmt.Fprintf(os.Stderr, "rig: port forward stopped: %v\n", err)
			}
		}()
	}
	cmd := ns.Command(argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err), nil
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case err := <-done:
			return exitCode(err), nil
		case <-time.After(90 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return exitCode(<-done), nil
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 1
}

// removeCreatedMountPoints removes the empty directories and empty files the node agent
// created on the host as mount points, newest first. Anything that is not empty is left
// alone: it was not ours, or another rig still uses it (run one rig at a time).
func removeCreatedMountPoints(record string, log logr.Logger) {
	b, err := os.ReadFile(record)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	seen := map[string]bool{}
	removed := 0
	for i := len(lines) - 1; i >= 0; i-- {
		p := strings.TrimSpace(lines[i])
		if p == "" || seen[p] || !filepath.IsAbs(p) {
			continue
		}
		seen[p] = true
		fi, err := os.Lstat(p)
		if err != nil || (!fi.IsDir() && fi.Size() != 0) {
			continue
		}
		if os.Remove(p) == nil {
			removed++
		}
	}
	log.Info("Removed mount points created on the host", "count", removed)
}

// lockFile serializes rigs on one machine: they share the mount-point directories the
// node agent creates on the host, and one rig's cleanup must not pull them from under
// another's pods.
const lockFile = "/run/lock/baokeeper-rig.lock"

func lockRig() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(lockFile), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", lockFile, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another rig is running on this machine (it holds %s): stop it first, one rig at a time", lockFile)
	}
	return func() { _ = f.Close() }, nil
}

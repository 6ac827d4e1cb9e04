// Command image builds the operator's OCI image without a container engine: a
// static executable per platform on an empty base, non-root, with an SBOM, written
// as an OCI image layout. Two builds of the same source give the same digests.
//
//	go run ./hack/image --version 0.1.0 --out dist/oci [--platforms linux/amd64,linux/arm64]
//
// The timestamps come from SOURCE_DATE_EPOCH (make image sets it to the commit's
// time). The layout names the image REPOSITORY:VERSION; the rig runs it from there,
// and `crane push` or `skopeo copy oci:dist/oci:...` publishes it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	repo := fs.String("repository", "ghcr.io/baokeeper/baokeeper", "Image repository, without tag.")
	version := fs.String("version", "", "Release version: the image's tag and label (required).")
	revision := fs.String("revision", "", "Source revision (git commit) for the image's label.")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "Comma-separated OS/ARCH list.")
	out := fs.String("out", "dist/oci", "OCI image layout directory to write (replaced).")
	work := fs.String("work-dir", "dist/build", "Directory for the executables and SBOMs.")
	pkg := fs.String("package", "./cmd/baokeeper", "Go package of the operator.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return fmt.Errorf("--version is required (make image passes the chart's appVersion)")
	}
	created := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds: %w", s, err)
		}
		created = time.Unix(sec, 0).UTC()
	}
	r := Release{Repository: *repo, Version: *version, Revision: *revision, Created: created}

	var bins []Binary
	for _, p := range strings.Split(*platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("platform %q is not OS/ARCH, for example linux/amd64", p)
		}
		exe := filepath.Join(*work, goos+"-"+goarch, "baokeeper")
		fmt.Printf("image: building %s for %s/%s\n", *pkg, goos, goarch)
		start := time.Now()
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
			"-ldflags", "-s -w -buildid= -X main.version="+*version, "-o", exe, *pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build for %s/%s failed: %w", goos, goarch, err)
		}
		data, err := os.ReadFile(exe)
		if err != nil {
			return err
		}
		sbom, err := SBOM(r, data, goos+"/"+goarch)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*work, goos+"-"+goarch, "baokeeper.spdx.json"), sbom, 0o644); err != nil {
			return err
		}
		fmt.Printf("image: %s/%s built in %s (%d MiB)\n", goos, goarch, time.Since(start).Round(time.Second), len(data)>>20)
		bins = append(bins, Binary{OS: goos, Arch: goarch, Data: data, SBOM: sbom})
	}
	idx, err := Index(r, bins)
	if err != nil {
		return err
	}
	if err := WriteLayout(*out, r, idx); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	fmt.Printf("image: %s@%s written to %s\n", r.Ref(), d, *out)
	for _, m := range im.Manifests {
		fmt.Printf("image:   %s/%s %s\n", m.Platform.OS, m.Platform.Architecture, m.Digest)
	}
	return nil
}

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/baokeeper/baokeeper/internal/service/executorjob"
)

// peersFile is the file OpenBao's Raft storage reads, and removes, when it starts:
// the Raft configuration to recover to (OpenBao's "lost quorum" recovery).
const peersFile = "peers.json"

// raftDataFile is what a member's Raft directory holds once it ever ran: the log
// and the stable store.
const raftDataFile = "raft.db"

// writePeersFlags are the flags of "executor write-peers".
type writePeersFlags struct {
	dir, id, address string
	terminationLog   string
}

// peer is one server of peers.json (Raft protocol version 3).
type peer struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	NonVoter bool   `json:"non_voter"`
}

// writePeersResult is what the Job reports.
type writePeersResult struct {
	// Path is the file written.
	Path string `json:"path"`
	// Peers is its content.
	Peers []peer `json:"peers"`
}

func parseWritePeersFlags(args []string, env executorEnv) (writePeersFlags, error) {
	var f writePeersFlags
	fs := flag.NewFlagSet("baokeeper executor "+executorjob.ActionWritePeers, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.StringVar(&f.dir, "raft-dir", "", "The survivor's Raft directory (the raft folder of its data volume).")
	fs.StringVar(&f.id, "id", "", "The survivor's Raft node ID (its pod name).")
	fs.StringVar(&f.address, "address", "", "The survivor's Raft address, host:port (its cluster address).")
	fs.StringVar(&f.terminationLog, "termination-log", "/dev/termination-log", "File that receives the result for the controller; empty disables it.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if m := missingFlags(map[string]bool{"--raft-dir": f.dir == "", "--id": f.id == "", "--address": f.address == ""}); len(m) > 0 {
		return f, fmt.Errorf("missing %s", strings.Join(m, ", "))
	}
	if host, port, err := net.SplitHostPort(f.address); err != nil || host == "" || port == "" {
		return f, fmt.Errorf("--address %q must be host:port (the survivor's cluster address)", f.address)
	}
	return f, nil
}

// runWritePeers writes peers.json naming one voter into a survivor's Raft
// directory, the first step of OpenBao's recovery of a lost majority: when the
// survivor starts it reads the file, makes that one server the whole Raft
// configuration, and removes the file. It refuses a directory without Raft data
// (a volume that never held a member: recovering from it would lose everything),
// and writes through a temporary file renamed into place, so that OpenBao never
// reads half a file. Writing again is harmless: the file says the same.
func runWritePeers(args []string, env executorEnv) int {
	f, err := parseWritePeersFlags(args, env)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	report := func(msg string) {
		if f.terminationLog == "" {
			return
		}
		if werr := os.WriteFile(f.terminationLog, []byte(msg), 0o644); werr != nil {
			fmt.Fprintf(env.stderr, "baokeeper executor %s: failed to write %s: %v\n", executorjob.ActionWritePeers, f.terminationLog, werr)
		}
	}
	fail := func(msg string) int {
		fmt.Fprintln(env.stderr, msg)
		report(msg)
		return exitFatal
	}
	if err != nil {
		return fail(fmt.Sprintf("invalid flags: %v", err))
	}
	if _, err := os.Stat(filepath.Join(f.dir, raftDataFile)); err != nil {
		return fail(fmt.Sprintf("refusing to write %s: %s holds no Raft data (%v); this volume is not the survivor's", peersFile, f.dir, err))
	}
	res := writePeersResult{Path: filepath.Join(f.dir, peersFile), Peers: []peer{{ID: f.id, Address: f.address}}}
	data, err := json.Marshal(res.Peers)
	if err != nil {
		return fail(fmt.Sprintf("failed to encode %s: %v", peersFile, err))
	}
	if err := writeFileAtomic(res.Path, data); err != nil {
		return fail(err.Error())
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(env.stdout, string(out))
	report(string(out))
	return exitOK
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, synced and renamed into place, then syncs the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("failed to create a temporary file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to set the mode of %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("failed to move %s into place: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("failed to open %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", dir, err)
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestWritePeers(t *testing.T) {
	const addr = "bao-0.bao-internal.ns.svc:8201"
	tests := []struct {
		reason   string
		raftData bool   // the directory holds raft.db
		before   string // peers.json before the run; "" for none
		args     []string
		wantCode int
		wantMsg  string
	}{
		{reason: "a survivor's Raft directory: peers.json names it as the only voter",
			raftData: true, args: []string{"--id", "bao-0", "--address", addr}, wantCode: exitOK},
		{reason: "again after a crash, over a file written before: the same file",
			raftData: true, before: `[{"id":"bao-9"}]`, args: []string{"--id", "bao-0", "--address", addr}, wantCode: exitOK},
		{reason: "an empty volume (no raft.db): refused, nothing written",
			args: []string{"--id", "bao-0", "--address", addr}, wantCode: exitFatal, wantMsg: "holds no Raft data"},
		{reason: "an address without a port: refused, nothing written",
			raftData: true, args: []string{"--id", "bao-0", "--address", "bao-0"}, wantCode: exitFatal, wantMsg: "must be host:port"},
		{reason: "no node ID: refused, nothing written",
			raftData: true, args: []string{"--address", addr}, wantCode: exitFatal, wantMsg: "missing --id"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			if tt.raftData {
				g.Expect(os.WriteFile(filepath.Join(dir, "raft.db"), []byte("log"), 0o600)).To(Succeed())
			}
			if tt.before != "" {
				g.Expect(os.WriteFile(filepath.Join(dir, "peers.json"), []byte(tt.before), 0o600)).To(Succeed())
			}
			termLog := filepath.Join(t.TempDir(), "termination-log")
			var stdout, stderr bytes.Buffer
			args := append([]string{"write-peers", "--raft-dir", dir, "--termination-log", termLog}, tt.args...)
			code := runExecutor(context.Background(), args, executorEnv{stdout: &stdout, stderr: &stderr})
			g.Expect(code).To(Equal(tt.wantCode), "stderr: %s", stderr.String())
			msg, err := os.ReadFile(termLog)
			g.Expect(err).NotTo(HaveOccurred())
			entries, err := os.ReadDir(dir)
			g.Expect(err).NotTo(HaveOccurred())
			for _, e := range entries {
				g.Expect(e.Name()).To(BeElementOf("raft.db", "peers.json"), "no temporary file is left")
			}
			if tt.wantCode != exitOK {
				g.Expect(string(msg)).To(ContainSubstring(tt.wantMsg))
				got, _ := os.ReadFile(filepath.Join(dir, "peers.json"))
				g.Expect(string(got)).To(Equal(tt.before), "nothing written")
				return
			}
			raw, err := os.ReadFile(filepath.Join(dir, "peers.json"))
			g.Expect(err).NotTo(HaveOccurred())
			var peers []map[string]any
			g.Expect(json.Unmarshal(raw, &peers)).To(Succeed())
			g.Expect(peers).To(Equal([]map[string]any{{"id": "bao-0", "address": addr, "non_voter": false}}),
				"OpenBao's peers.json (Raft protocol 3): id, address, non_voter")
			fi, err := os.Stat(filepath.Join(dir, "peers.json"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
			var res writePeersResult
			g.Expect(json.Unmarshal(msg, &res)).To(Succeed())
			g.Expect(res.Path).To(Equal(filepath.Join(dir, "peers.json")))
		})
	}
}

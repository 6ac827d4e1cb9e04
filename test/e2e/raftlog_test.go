//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// leadershipMarks are the log lines in which OpenBao and its Raft library say why
// leadership changed. They explain an election count a spec did not plan: a leader
// that lost contact with a quorum (a starved rig, a partition) says the first, a
// step-down the second, a follower that stopped hearing from its leader the third.
var leadershipMarks = []string{
	"failed to contact quorum of nodes",
	"stepping down from active operation",
	"heartbeat timeout reached",
	"leadership lost",
	"leadership transfer",
	"election won",
	"acquired lock, enabling active operation",
	"entering leader state",
	// Why a leader lost a quorum: its Raft could not reach a follower (the address
	// it dialled, the error). Repeats are folded into the first (repeatedMarks).
	"failed to heartbeat to",
	"failed to appendEntries to",
}

// repeatedMarks are the leadershipMarks a member logs again on every retry: a run of
// them within repeatWithin is kept as its first line and a count.
var repeatedMarks = []string{"failed to heartbeat to", "failed to appendEntries to"}

const repeatWithin = 10 * time.Second

// raftLogLine is one leadership line of a member's log.
type raftLogLine struct {
	at     time.Time
	member string
	text   string
	// more counts the lines like it folded into this one (repeatedMarks).
	more int
}

func (l raftLogLine) String() string {
	if l.more > 0 {
		return fmt.Sprintf("%s %s: %s (and %d more like it)", l.at.Local().Format(clock), l.member, l.text, l.more)
	}
	return fmt.Sprintf("%s %s: %s", l.at.Local().Format(clock), l.member, l.text)
}

// repeatedMark is the repeatedMarks entry line holds, or "".
func repeatedMark(line string) string {
	for _, m := range repeatedMarks {
		if strings.Contains(line, m) {
			return m
		}
	}
	return ""
}

// leadershipLog reads the leadership lines that namespace's members logged between
// from and to, in time order, from the rig's container logs (kept after a pod is
// deleted, so a replaced member's lines are there too).
func leadershipLog(namespace string, from, to time.Time) []raftLogLine {
	logs, _ := filepath.Glob(filepath.Join(rigDir, "nodes", "pods", namespace+"_*", "*.log"))
	var out []raftLogLine
	for _, path := range logs {
		pod := strings.TrimPrefix(filepath.Base(filepath.Dir(path)), namespace+"_")
		member, _, _ := strings.Cut(pod, "_")
		out = append(out, scanLeadership(path, member, from, to)...)
	}
	slices.SortStableFunc(out, func(a, b raftLogLine) int { return a.at.Compare(b.at) })
	return out
}

// scanLeadership returns the leadership lines of one log file within [from, to].
// OpenBao's lines start with an RFC 3339 time.
func scanLeadership(path, member string, from, to time.Time) []raftLogLine {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []raftLogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !slices.ContainsFunc(leadershipMarks, func(m string) bool { return strings.Contains(line, m) }) {
			continue
		}
		stamp, rest, _ := strings.Cut(line, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || at.Before(from) || at.After(to) {
			continue
		}
		if mark := repeatedMark(rest); mark != "" {
			if i := slices.IndexFunc(out, func(l raftLogLine) bool {
				return repeatedMark(l.text) == mark && at.Sub(l.at) < repeatWithin
			}); i >= 0 {
				out[i].more++
				continue
			}
		}
		out = append(out, raftLogLine{at: at, member: member, text: strings.TrimSpace(rest)})
	}
	return out
}

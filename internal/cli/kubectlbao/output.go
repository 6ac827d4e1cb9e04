package kubectlbao

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// Output formats of -o.
const (
	// OutputText is the default: text for a person.
	OutputText = ""
	// OutputJSON prints the object as indented JSON.
	OutputJSON = "json"
	// OutputYAML prints the object as YAML.
	OutputYAML = "yaml"
)

// ValidateOutput checks -o.
func ValidateOutput(format string) error {
	switch format {
	case OutputText, OutputJSON, OutputYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o json or -o yaml, or leave -o out for text", format)
}

// PrintObject writes v as JSON or YAML.
func PrintObject(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	switch format {
	case OutputJSON:
		b, err = json.MarshalIndent(v, "", "    ")
		b = append(b, '\n')
	case OutputYAML:
		b, err = yaml.Marshal(v)
	default:
		return ValidateOutput(format)
	}
	if err != nil {
		return fmt.Errorf("failed to encode the output as %s: %w", format, err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("failed to write the output: %w", err)
	}
	return nil
}

// Printable is the cluster as kubectl get -o prints it: with apiVersion and kind,
// without managedFields.
func Printable(c *baov1.OpenBaoCluster) *baov1.OpenBaoCluster {
	out := c.DeepCopy()
	out.APIVersion = baov1.GroupVersion.String()
	out.Kind = "OpenBaoCluster"
	out.ManagedFields = nil
	return out
}

// RequestResult is what a control command did, for -o json|yaml.
type RequestResult struct {
	// Cluster is namespace/name.
	Cluster string `json:"cluster"`
	// Control is the command (promote, rollback, retry, pause, resume, break-glass ack).
	Control Control `json:"control"`
	// Field is what was written.
	Field string `json:"field"`
	// Value is the written value (the token or the nonce; true or false for pause
	// and resume).
	Value string `json:"value"`
	// FieldManager is the field manager of the write.
	FieldManager string `json:"fieldManager,omitempty"`
	// Written is false when nothing needed writing.
	Written bool `json:"written"`
	// Next says what the operator does next.
	Next string `json:"next"`
	// Warnings are what a person should know.
	Warnings []string `json:"warnings,omitempty"`
	// Follow are the commands that show how it goes.
	Follow []string `json:"follow"`
	// Receipt is the snapshot taken for this request (snapshot --wait).
	Receipt *baov1.SnapshotReceipt `json:"receipt,omitempty"`
	// Restore is the in-place restore this request ran (restore --in-place --wait).
	Restore *baov1.RestoreStatus `json:"restore,omitempty"`
	// Rehearsal is the rehearsal this request ran (rehearse --wait).
	Rehearsal *baov1.RehearsalStatus `json:"rehearsal,omitempty"`
	// Recovery is the recovery from a lost majority this request ran
	// (recover-quorum --wait).
	Recovery *baov1.QuorumRecoveryStatus `json:"recovery,omitempty"`
}

// RenderResult writes a control command's result for a person.
func RenderResult(w io.Writer, r *RequestResult) error {
	d := newDescriber(w)
	if r.Written {
		d.line(0, "Set %s=%s on openbaocluster %s (field manager %s).", r.Field, r.Value, r.Cluster, orDash(r.FieldManager))
	} else {
		d.line(0, "Nothing to write on openbaocluster %s: %s.", r.Cluster, r.Next)
	}
	for _, w := range r.Warnings {
		d.line(0, "Warning: %s", w)
	}
	if r.Written {
		d.line(0, "Next: %s", r.Next)
	}
	if rc := r.Receipt; rc != nil {
		d.line(0, "Snapshot verified:")
		d.kv(1, "Location", "%s", rc.Location)
		d.kv(1, "Size", "%d bytes", rc.SizeBytes)
		d.kv(1, "SHA-256", "%s", rc.SHA256)
		d.kv(1, "Raft index", "%d (from %s, OpenBao %s)", rc.RaftIndex, orDash(rc.FromMember), orDash(rc.Version))
		if rc.TakenAt != nil {
			d.kv(1, "Taken at", "%s", rc.TakenAt.UTC().Format(time.RFC3339))
		}
		return d.flush()
	}
	if rs := r.Restore; rs != nil {
		d.line(0, "Restored in place:")
		d.kv(1, "Snapshot", "%s (sha256 %s)", rs.Source, rs.SHA256)
		d.kv(1, "Applied", "at Raft index %d", rs.AppliedIndex)
		if rs.StartedAt != nil && rs.CompletedAt != nil {
			d.kv(1, "Took", "%s", rs.CompletedAt.Sub(rs.StartedAt.Time).Round(time.Second))
		}
		return d.flush()
	}
	if rq := r.Recovery; rq != nil && rq.Step != baov1.QuorumRecoveryDone {
		d.line(0, "The recovery failed:")
		d.kv(1, "Failure", "%s", orDash(rq.Failure))
		return d.flush()
	}
	if rq := r.Recovery; rq != nil {
		d.line(0, "Recovered from a lost majority:")
		d.kv(1, "Survivor", "%s (leads alone)", rq.Survivor)
		others := make([]string, len(rq.Others))
		for i, o := range rq.Others {
			others[i] = o.Name
		}
		d.kv(1, "Joining afresh", "%s (with fresh data; scaling makes them voters: kubectl bao status)", orDash(strings.Join(others, ", ")))
		if rq.StartedAt != nil && rq.CompletedAt != nil {
			d.kv(1, "Took", "%s", rq.CompletedAt.Sub(rq.StartedAt.Time).Round(time.Second))
		}
		return d.flush()
	}
	if rh := r.Rehearsal; rh != nil {
		d.line(0, "Rehearsal ended:")
		renderRehearsalFields(d, 1, rh)
		return d.flush()
	}
	d.line(0, "Follow it:")
	for _, f := range r.Follow {
		d.line(1, "%s", f)
	}
	return d.flush()
}

// Follow are the commands that show how a cluster's upgrade goes.
func Follow(c *baov1.OpenBaoCluster) []string {
	return []string{
		fmt.Sprintf("kubectl bao status %s -n %s", c.Name, c.Namespace),
		fmt.Sprintf("kubectl bao timeline %s -n %s", c.Name, c.Namespace),
		fmt.Sprintf("kubectl get openbaocluster %s -n %s -w", c.Name, c.Namespace),
	}
}

// renderRehearsalFields writes a rehearsal's versions, copy, snapshot and
// verdict at indent.
func renderRehearsalFields(d *describer, indent int, rh *baov1.RehearsalStatus) {
	d.kv(indent, "Upgrade", "%s to %s", orDash(rh.FromVersion), rh.TargetVersion)
	if rh.Image != "" {
		d.kv(indent, "Image", "%s", rh.Image)
	}
	d.kv(indent, "Copy", "%s", orDash(rh.Cluster))
	if rh.Snapshot != "" {
		d.kv(indent, "Snapshot", "%s (sha256 %s)", rh.Snapshot, rh.SHA256)
	}
	d.kv(indent, "Step", "%s", rh.Step)
	if rh.WaitingFor != "" {
		d.kv(indent, "Waiting for", "%s", rh.WaitingFor)
	}
	if res := rh.Result; res != nil {
		d.kv(indent, "Verdict", "%s: %s", res.Outcome, res.Message)
	}
}

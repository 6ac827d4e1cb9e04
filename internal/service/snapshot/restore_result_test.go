package snapshot

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParseRestoreResult(t *testing.T) {
	sum := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		reason  string
		msg     string
		want    RestoreResult
		wantErr string
	}{
		{
			reason: "what the executor prints, with the newline kubelet may keep",
			msg: `{"location":"s3://snaps/ns/bao/a.snap","sha256":"` + sum + `","sizeBytes":4096,"raftIndex":812,"raftTerm":3,` +
				`"restoredTo":"bao-0","restoredAt":"2026-11-29T12:00:00Z"}` + "\n",
			want: RestoreResult{Location: "s3://snaps/ns/bao/a.snap", SHA256: sum, SizeBytes: 4096, RaftIndex: 812, RaftTerm: 3,
				RestoredTo: "bao-0", RestoredAt: at},
		},
		{reason: "an empty message: the Job wrote nothing", msg: " \n", wantErr: "termination message is empty"},
		{reason: "a failure message is no result", msg: "baokeeper executor restore: fatal: the object s3://b/k has sha256 x",
			wantErr: "is not a restore result"},
		{reason: "no location", msg: `{"sha256":"` + sum + `","sizeBytes":1}`, wantErr: "lacks location"},
		{reason: "no checksum", msg: `{"location":"s3://snaps/k","sha256":""}`, wantErr: "lacks sha256"},
		{reason: "neither, both named", msg: `{"rebound":true}`, wantErr: "lacks location, sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseRestoreResult(tt.msg)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)), tt.reason)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), tt.reason)
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestRestoreResultJSON pins the field names the controller and the executor share.
func TestRestoreResultJSON(t *testing.T) {
	g := NewWithT(t)
	b, err := json.Marshal(RestoreResult{Location: "s3://b/k", SHA256: "ab", SizeBytes: 2, RaftIndex: 3, RaftTerm: 4,
		RestoredTo: "bao-0", RestoredAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal(`{"location":"s3://b/k","sha256":"ab","sizeBytes":2,"raftIndex":3,"raftTerm":4,"restoredTo":"bao-0","restoredAt":"2026-11-29T12:00:00Z"}`))
	b, err = json.Marshal(RebindResult{Rebound: true, ExecutorSubject: "system:serviceaccount:ns:bao-executor",
		ControllerSubject: "system:serviceaccount:baokeeper:controller", Audience: "openbao.baokeeper.dev/ns/bao"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal(`{"rebound":true,"executorSubject":"system:serviceaccount:ns:bao-executor",` +
		`"controllerSubject":"system:serviceaccount:baokeeper:controller","audience":"openbao.baokeeper.dev/ns/bao"}`))
}

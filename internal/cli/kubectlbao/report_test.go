package kubectlbao

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{`login ok, token hvs.CAESIJ3k2abcdefghijklmnopqrstuvwxyz`, `login ok, token hvs.REDACTED`},
		{`old style s.abcdefghijklmnopqrstuvwx here`, `old style s.REDACTED here`},
		{`{"client_token":"anything","policies":["app"]}`, `{"client_token":"REDACTED","policies":["app"]}`},
		{`{"secret_id": "x-y-z"}`, `{"secret_id": "REDACTED"}`},
		{`Authorization: Bearer abc.def.ghi`, `Authorization: Bearer REDACTED`},
		{`jwt eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlX2hlcmU`, `jwt REDACTED-JWT`},
		{`password=hunter2 next`, `password="REDACTED" next`},
		{`access_key = "AKIA1234"`, `access_key = "REDACTED"`},
		{`nothing secret: bao-0.bao-internal.vault.svc elected leader`, `nothing secret: bao-0.bao-internal.vault.svc elected leader`},
	}
	for _, tc := range cases {
		NewWithT(t).Expect(Redact(tc.in)).To(Equal(tc.want), tc.in)
	}
}

func TestBuildReport(t *testing.T) {
	g := NewWithT(t)
	cs := fleetClusters()
	c := &cs[0]
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bao-0", Namespace: "prod"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "openbao", Env: []corev1.EnvVar{
			{Name: "BAO_TOKEN", Value: "hvs.secretsecretsecretsecret"},
			{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		}}}}}
	in := ReportInput{Cluster: c, Now: fleetNow, Pods: []corev1.Pod{pod},
		MemberLogs: map[string]string{"bao-0": "2026-12-06T11:00:00Z [INFO] core: vault is unsealed\nrequest with X-Vault-Token hvs.ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"},
		OperatorLogs: map[string]string{"baokeeper-abc": `{"msg":"Decided","OpenBaoCluster":{"name":"bao","namespace":"prod"}}` + "\n" +
			`{"msg":"Decided","OpenBaoCluster":{"name":"bao","namespace":"dev"}}` + "\n"},
		Problems: []string{"the log of bao-1: pods \"bao-1\" is forbidden"}}
	files, err := BuildReport(in)
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]string{}
	var names []string
	for _, f := range files {
		byName[f.name] = string(f.data)
		names = append(names, f.name)
	}
	g.Expect(names).To(ContainElements("README.txt", "status.txt", "history.txt", "timeline.txt", "cluster.yaml", "raft.txt",
		"objects/pod-bao-0.yaml", "logs/bao-0.log", "logs/operator-baokeeper-abc.log"))
	g.Expect(byName["README.txt"]).To(ContainSubstring(`the log of bao-1: pods "bao-1" is forbidden`), "what is missing is said")
	g.Expect(byName["objects/pod-bao-0.yaml"]).NotTo(ContainSubstring("hvs.secret"))
	g.Expect(byName["objects/pod-bao-0.yaml"]).To(ContainSubstring("value: REDACTED"))
	g.Expect(byName["objects/pod-bao-0.yaml"]).To(ContainSubstring("secretKeyRef"), "references stay: they name no secret value")
	g.Expect(byName["logs/bao-0.log"]).To(ContainSubstring("vault is unsealed"))
	g.Expect(byName["logs/bao-0.log"]).To(ContainSubstring("hvs.REDACTED"))
	g.Expect(byName["logs/operator-baokeeper-abc.log"]).To(ContainSubstring(`"namespace":"prod"`))
	g.Expect(byName["logs/operator-baokeeper-abc.log"]).NotTo(ContainSubstring(`"namespace":"dev"`), "only this cluster's lines")
	for name, data := range byName {
		g.Expect(data).NotTo(MatchRegexp(`hvs\.[A-Za-z0-9]{20,}`), name)
	}
	g.Expect(byName["history.txt"]).To(ContainSubstring("No operation of openbaocluster prod/bao has ended yet"))

	var buf bytes.Buffer
	g.Expect(WriteReport(&buf, "bundle", files, fleetNow)).To(Succeed())
	gz, err := gzip.NewReader(&buf)
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.HasPrefix(h.Name, "bundle/")).To(BeTrue(), h.Name)
		got = append(got, strings.TrimPrefix(h.Name, "bundle/"))
	}
	g.Expect(got).To(Equal(names))
}

package openbaocluster_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// These specs talk to the real API server with the generated CRD: they prove the
// OpenAPI schema, the defaults and the CEL rules, with the messages a person reads.
var _ = Describe("OpenBaoCluster CRD validation", func() {
	var ns string
	ctx := context.Background()

	BeforeEach(func() { ns = newNamespace(ctx) })

	It("accepts a minimal cluster and fills in the defaults", func() {
		c := newCluster(ns, "minimal")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		got := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		Expect(got.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		Expect(got.Spec.Upgrade.Strategy).To(Equal(baov1.RollingUpdateStrategy))
		Expect(got.Spec.Upgrade.PreUpgradeSnapshot.Policy).To(Equal(baov1.SnapshotAlways))
		Expect(got.Spec.Upgrade.Rolling.StepTimeout).To(HaveValue(Equal(baov1.Duration("10m"))))
		Expect(got.Spec.Upgrade.Rolling.SettleTime).To(HaveValue(Equal(baov1.Duration("0s"))))
		Expect(got.Spec.Upgrade.Rolling.MaxLagEntries).To(HaveValue(BeEquivalentTo(1000)))
		Expect(got.Spec.Upgrade.BlueGreen.MaxJobFailures).To(HaveValue(BeEquivalentTo(3)))
		Expect(got.Spec.Seal.Type).To(Equal(baov1.StaticSeal))
		Expect(got.Spec.Raft.PerformanceMultiplier).To(HaveValue(BeEquivalentTo(1)))
		Expect(got.Spec.Storage.Size).NotTo(BeNil())
		Expect(got.Spec.Storage.Size.String()).To(Equal("1Gi"))
		Expect(got.Spec.TLS.RenewBefore).To(HaveValue(Equal(baov1.Duration("720h"))))
	})

	DescribeTable("accepts valid versions",
		func(v string) {
			Expect(k8s.Create(ctx, newCluster(ns, "ok", withVersion(v)))).To(Succeed())
		},
		Entry("plain", "2.4.0"),
		Entry("leading v", "v2.5.1"),
		Entry("prerelease", "2.5.0-rc1"),
		Entry("build metadata", "2.4.0+build.7"),
	)

	DescribeTable("refuses invalid objects with a message that says what to change",
		func(mutate func(*baov1.OpenBaoCluster), wantMsg string) {
			c := newCluster(ns, "bad")
			mutate(c)
			err := k8s.Create(ctx, c)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(wantMsg))
		},
		Entry("two-part version", func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.4" },
			"spec.version must be a semantic version MAJOR.MINOR.PATCH such as 2.4.0"),
		Entry("a word as version", func(c *baov1.OpenBaoCluster) { c.Spec.Version = "latest" },
			"spec.version must be a semantic version"),
		Entry("leading zero", func(c *baov1.OpenBaoCluster) { c.Spec.Version = "2.04.0" },
			"spec.version must be a semantic version"),
		Entry("empty version", func(c *baov1.OpenBaoCluster) { c.Spec.Version = "" },
			"should be at least 1 chars long"),
		Entry("even replicas", func(c *baov1.OpenBaoCluster) { n := int32(4); c.Spec.Replicas = &n },
			"spec.replicas must be odd (1, 3, 5, 7 or 9) so Raft always has a majority"),
		Entry("too many replicas", func(c *baov1.OpenBaoCluster) { n := int32(11); c.Spec.Replicas = &n },
			"should be less than or equal to 9"),
		Entry("zero replicas", func(c *baov1.OpenBaoCluster) { n := int32(0); c.Spec.Replicas = &n },
			"should be greater than or equal to 1"),
		Entry("unknown strategy", func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.Strategy = "Canary" },
			`Unsupported value: "Canary": supported values: "RollingUpdate", "BlueGreen"`),
		Entry("custom seal without stanza", func(c *baov1.OpenBaoCluster) { c.Spec.Seal.Type = baov1.CustomSeal },
			"spec.seal.customStanza is required when spec.seal.type is Custom"),
		Entry("IfOlderThan without maxAge", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.PreUpgradeSnapshot.Policy = baov1.SnapshotIfOlderThan
		}, "spec.upgrade.preUpgradeSnapshot.maxAge is required when policy is IfOlderThan"),
		Entry("renewBefore not shorter than certificateDuration", func(c *baov1.OpenBaoCluster) {
			d, rb := baov1.Duration("6m"), baov1.Duration("10m")
			c.Spec.TLS.CertificateDuration, c.Spec.TLS.RenewBefore = &d, &rb
		}, "spec.tls.renewBefore must be shorter than spec.tls.certificateDuration"),
		Entry("a pod annotation under baokeeper.dev/", func(c *baov1.OpenBaoCluster) {
			c.Spec.PodAnnotations = map[string]string{"baokeeper.dev/restart": "x"}
		}, "spec.podAnnotations may not use keys under baokeeper.dev/"),
		Entry("an S3 endpoint with credentials in it", withEndpoint("http://AKIAEXAMPLE:wJalrXUtn@minio.storage.svc:9000"),
			"spec.upgrade.preUpgradeSnapshot.s3.endpoint must not carry credentials (user:password@)"),
		Entry("an S3 endpoint with a user name only", withEndpoint("https://AKIAEXAMPLE@s3.example.com"),
			"must not carry credentials"),
		Entry("an ftp:// S3 endpoint", withEndpoint("ftp://files.example.com"),
			"spec.upgrade.preUpgradeSnapshot.s3.endpoint must be an http:// or https:// URL of a host"),
		Entry("a bare host as S3 endpoint", withEndpoint("minio.storage.svc:9000"),
			"must be an http:// or https:// URL of a host"),
		Entry("an S3 CA bundle key that is not a Secret key", func(c *baov1.OpenBaoCluster) {
			withEndpoint("https://s3.internal:9000")(c)
			c.Spec.Upgrade.PreUpgradeSnapshot.S3.CABundle = &baov1.SecretKeyRef{Name: "s3-ca", Key: "../ca.crt"}
		}, `spec.upgrade.preUpgradeSnapshot.s3.caBundle.key: Invalid value: "../ca.crt": spec.upgrade.preUpgradeSnapshot.s3.caBundle.key in body should match`),
		Entry("an audit target that does not exist", func(c *baov1.OpenBaoCluster) {
			c.Spec.Audit.File = &baov1.FileAuditSpec{Target: "Syslog"}
		}, `spec.audit.file.target: Unsupported value: "Syslog": supported values: "Stdout", "DataVolume"`),
		Entry("an S3 endpoint with a path", withEndpoint("https://s3.example.com/snapshots"),
			"(the bucket goes in bucket, a path in prefix)"),
		Entry("a snapshot schedule that is not five cron fields", func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots = baov1.SnapshotsSpec{Schedule: "every day at noon", S3: snapshotBucket()}
		}, "spec.snapshots.schedule must be a cron expression of five fields"),
		Entry("@every as schedule", func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots = baov1.SnapshotsSpec{Schedule: "@every 1h", S3: snapshotBucket()}
		}, "or one of @hourly, @daily, @weekly, @monthly"),
		Entry("a bootstrap snapshot whose sha256 is not 64 hex digits", func(c *baov1.OpenBaoCluster) {
			c.Spec.Bootstrap = bootstrapFrom("ab12")
		}, "spec.bootstrap.fromSnapshot.sha256 must be the 64 lowercase hex digits of the snapshot's receipt"),
		Entry("a bootstrap snapshot without a key", func(c *baov1.OpenBaoCluster) {
			c.Spec.Bootstrap = bootstrapFrom(strings.Repeat("a", 64))
			c.Spec.Bootstrap.FromSnapshot.Key = ""
		}, "spec.bootstrap.fromSnapshot.key in body should be at least 1 chars long"),
		Entry("a drill schedule that is not five cron fields", func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots = baov1.SnapshotsSpec{S3: snapshotBucket(), Verify: &baov1.SnapshotVerifySpec{Schedule: "every sunday"}}
		}, "spec.snapshots.verify.schedule must be a cron expression of five fields"),
		Entry("a drill without a bucket", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.PreUpgradeSnapshot.S3 = nil
			c.Spec.Snapshots = baov1.SnapshotsSpec{Verify: &baov1.SnapshotVerifySpec{Schedule: "@weekly"}}
		}, "spec.snapshots.verify needs a bucket to restore from"),
		Entry("a snapshot schedule without a bucket", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.PreUpgradeSnapshot.S3 = nil
			c.Spec.Snapshots = baov1.SnapshotsSpec{Schedule: "0 * * * *"}
		}, "spec.snapshots.schedule needs a bucket: set spec.snapshots.s3"),
		Entry("retention count 0", func(c *baov1.OpenBaoCluster) {
			zero := int32(0)
			c.Spec.Snapshots = baov1.SnapshotsSpec{S3: snapshotBucket(), Retention: &baov1.SnapshotRetention{Count: &zero}}
		}, "spec.snapshots.retention.count: Invalid value: 0: spec.snapshots.retention.count in body should be greater than or equal to 1"),
		Entry("retention without count or maxAge", func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots = baov1.SnapshotsSpec{S3: snapshotBucket(), Retention: &baov1.SnapshotRetention{}}
		}, "spec.snapshots.retention needs count, maxAge or both"),
		Entry("a window start that is not five cron fields", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "saturday night", Duration: "4h"}}
		}, "spec.upgrade.windows[].start must be a cron expression of five fields"),
		Entry("a window of zero length", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "0s"}}
		}, "spec.upgrade.windows[].duration must be greater than 0s and at most 168h"),
		Entry("a window duration without a unit", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "4"}}
		}, "spec.upgrade.windows[].duration must be a positive duration with a unit, for example 4h"),
		Entry("a window longer than a week", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "200h"}}
		}, "at most 168h"),
		Entry("a window without a duration", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6"}}
		}, "spec.upgrade.windows[0].duration"),
		Entry("an unknown windowEnd", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.WindowEnd = "Abort"
		}, `spec.upgrade.windowEnd: Unsupported value: "Abort": supported values: "Pause", "Finish"`),
		Entry("a negative soak", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "staging", Soak: durationPtr("-1h")}}
		}, "spec.upgrade.after[].soak must not be negative"),
		Entry("a soak without a unit", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "staging", Soak: durationPtr("24")}}
		}, "spec.upgrade.after[].soak must be a duration with a unit, for example 24h"),
		Entry("an order that names the cluster itself", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: c.Name}}
		}, "spec.upgrade.after names this cluster itself"),
		Entry("a custom seal stanza over 16 KiB", func(c *baov1.OpenBaoCluster) {
			c.Spec.Seal.Type = baov1.CustomSeal
			c.Spec.Seal.CustomStanza = `seal "transit" { key_name = "` + strings.Repeat("k", 16400) + `" }`
		}, "spec.seal.customStanza: Too long: may not be more than 16384 bytes"),
		Entry("an executor image over 512 characters", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.Executor.Image = "ghcr.io/baokeeper/" + strings.Repeat("a", 500) + ":0.2.0"
		}, "spec.upgrade.executor.image: Too long: may not be more than 512 bytes"),
		Entry("an order that names a cluster twice", func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "staging", Namespace: "stage"}, {Name: "dev"}, {Name: "staging", Namespace: "stage", Soak: durationPtr("1h")}}
		}, "spec.upgrade.after names the same cluster more than once: name each cluster once"),
		Entry("an order of 17 clusters", func(c *baov1.OpenBaoCluster) {
			for i := range 17 {
				c.Spec.Upgrade.After = append(c.Spec.Upgrade.After, baov1.UpgradeOrder{Name: fmt.Sprintf("c%d", i)})
			}
		}, "spec.upgrade.after: Too many: 17: must have at most 16 items"),
		Entry("17 peers in spec.networkPolicy.clients", func(c *baov1.OpenBaoCluster) {
			for i := range 17 {
				c.Spec.NetworkPolicy.Clients = append(c.Spec.NetworkPolicy.Clients, networkingv1.NetworkPolicyPeer{
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("c%d", i)}}})
			}
		}, "spec.networkPolicy.clients: Too many: 17: must have at most 16 items"),
		Entry("historyLimit 0", func(c *baov1.OpenBaoCluster) {
			c.Spec.HistoryLimit = new(int32(0))
		}, "spec.historyLimit: Invalid value: 0: spec.historyLimit in body should be greater than or equal to 1"),
		Entry("historyLimit over 50", func(c *baov1.OpenBaoCluster) {
			c.Spec.HistoryLimit = new(int32(51))
		}, "spec.historyLimit: Invalid value: 51: spec.historyLimit in body should be less than or equal to 50"),
		Entry("retention maxAge without a unit", func(c *baov1.OpenBaoCluster) {
			c.Spec.Snapshots = baov1.SnapshotsSpec{S3: snapshotBucket(), Retention: &baov1.SnapshotRetention{MaxAge: durationPtr("7")}}
		}, "spec.snapshots.retention.maxAge must be a duration with a unit, for example 168h"),
	)

	It("accepts windows, an order after clusters and a history limit", func() {
		c := newCluster(ns, "fleetok")
		c.Spec.HistoryLimit = new(int32(20))
		c.Spec.Upgrade.Windows = []baov1.MaintenanceWindow{{Start: "0 2 * * 6", Duration: "4h", TimeZone: "Europe/Berlin"}, {Start: "@daily", Duration: "30m"}}
		c.Spec.Upgrade.After = []baov1.UpgradeOrder{{Name: "staging", Soak: durationPtr("24h")}, {Name: c.Name, Namespace: "other"}, {Name: "dev"}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		got := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		Expect(got.Spec.Upgrade.WindowEnd).To(Equal(baov1.WindowEndPause), "the default")
	})

	It("accepts a snapshot schedule with a time zone and retention", func() {
		c := newCluster(ns, "snapok")
		count := int32(7)
		c.Spec.Snapshots = baov1.SnapshotsSpec{Schedule: "0 */6 * * *", TimeZone: "Europe/Berlin", S3: snapshotBucket(),
			Retention: &baov1.SnapshotRetention{Count: &count, MaxAge: durationPtr("168h")}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(k8s.Delete(ctx, c)).To(Succeed())
	})

	DescribeTable("accepts S3 endpoints",
		func(endpoint string) {
			c := newCluster(ns, "s3ok")
			withEndpoint(endpoint)(c)
			Expect(k8s.Create(ctx, c)).To(Succeed())
		},
		Entry("https host", "https://s3.eu-west-1.amazonaws.com"),
		Entry("http host and port, trailing slash", "http://minio.storage.svc:9000/"),
		Entry("an IPv6 address", "http://[fd00::1]:9000"),
	)

	It("defaults an audit file device to standard output", func() {
		c := newCluster(ns, "audit")
		c.Spec.Audit.File = &baov1.FileAuditSpec{}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(getCluster(ctx, c).Spec.Audit.File.Target).To(Equal(baov1.AuditStdout))
	})

	It("refuses a storage change once the cluster exists, saying what to do instead", func() {
		c := newCluster(ns, "storage")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		err := tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { q := resource.MustParse("5Gi"); cur.Spec.Storage.Size = &q })
		Expect(err).To(HaveOccurred(), "bug: a storage change was accepted and then ignored")
		Expect(err.Error()).To(ContainSubstring("spec.storage cannot change once the cluster exists"))
		Expect(err.Error()).To(ContainSubstring("expand each claim data-<member>"))
		Expect(tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
		})).
			To(Succeed(), "other workload fields change freely: they roll out")
	})

	It("takes spec.bootstrap only at creation: never added, changed or removed later", func() {
		c := newCluster(ns, "boot")
		c.Spec.Bootstrap = bootstrapFrom(strings.Repeat("a", 64))
		Expect(k8s.Create(ctx, c)).To(Succeed())
		err := tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Bootstrap.FromSnapshot.SHA256 = strings.Repeat("b", 64) })
		Expect(err).To(MatchError(ContainSubstring("spec.bootstrap cannot change once the cluster exists")))
		err = tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Bootstrap = nil })
		Expect(err).To(MatchError(ContainSubstring("spec.bootstrap can only be given when the cluster is created")))

		plain := newCluster(ns, "noboot")
		Expect(k8s.Create(ctx, plain)).To(Succeed())
		err = tryUpdate(ctx, plain, func(cur *baov1.OpenBaoCluster) { cur.Spec.Bootstrap = bootstrapFrom(strings.Repeat("a", 64)) })
		Expect(err).To(MatchError(ContainSubstring("kubectl bao restore --into NAME")))
		Expect(tryUpdate(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Upgrade.Paused = true })).To(Succeed(), "the rest of the spec changes freely")
	})

	It("refuses a strategy change while an upgrade runs, and allows it otherwise", func() {
		c := newCluster(ns, "strat")
		Expect(k8s.Create(ctx, c)).To(Succeed())

		By("changing the strategy with no upgrade running")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Upgrade.Strategy = baov1.BlueGreenStrategy })

		By("marking an upgrade as running in status")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := getCluster(ctx, c)
			cur.Status.Upgrade = &baov1.UpgradeStatus{Strategy: baov1.BlueGreenStrategy, FromVersion: "2.4.0", TargetVersion: "2.4.1"}
			return k8s.Status().Update(ctx, cur)
		})).To(Succeed())

		By("changing the strategy mid-upgrade")
		var err error
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := getCluster(ctx, c)
			cur.Spec.Upgrade.Strategy = baov1.RollingUpdateStrategy
			err = k8s.Update(ctx, cur)
			if apierrors.IsConflict(err) {
				return err
			}
			return nil
		})).To(Succeed())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.upgrade.strategy cannot change while an upgrade runs (status.upgrade is set)"))

		By("changing something else mid-upgrade")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Upgrade.Paused = true })
	})

	It("stores extra initialization requests with free-form data", func() {
		c := newCluster(ns, "init")
		c.Spec.Initialization.ExtraRequests = []baov1.InitRequest{{
			Name: "kv", Path: "sys/mounts/secret",
			Data: &apiextensionsv1.JSON{Raw: []byte(`{"type":"kv","options":{"version":"2"}}`)},
		}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		got := &baov1.OpenBaoCluster{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		Expect(got.Spec.Initialization.ExtraRequests).To(HaveLen(1))
		Expect(got.Spec.Initialization.ExtraRequests[0].Operation).To(Equal("update"))
		Expect(string(got.Spec.Initialization.ExtraRequests[0].Data.Raw)).To(MatchJSON(`{"type":"kv","options":{"version":"2"}}`))
	})
})

func withEndpoint(endpoint string) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.PreUpgradeSnapshot.S3 = &baov1.S3Target{Endpoint: endpoint, Bucket: "snaps",
			CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
	}
}

func snapshotBucket() *baov1.S3Target {
	return &baov1.S3Target{Endpoint: "https://s3.example.com", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}
}

func durationPtr(s string) *baov1.Duration { d := baov1.Duration(s); return &d }

// bootstrapFrom is a spec.bootstrap from a snapshot with the given checksum.
func bootstrapFrom(sha string) *baov1.BootstrapSpec {
	return &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{S3: *snapshotBucket(), Key: "ns/bao/x.snap", SHA256: sha, SourceCluster: "bao"}}
}

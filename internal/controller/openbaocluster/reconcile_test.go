package openbaocluster_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	app "github.com/baokeeper/baokeeper/internal/app/openbaocluster"
	"github.com/baokeeper/baokeeper/internal/platform/openbao"
	"github.com/baokeeper/baokeeper/internal/platform/statusapply"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

const (
	timeout  = 20 * time.Second
	interval = 100 * time.Millisecond
)

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// expectOwned asserts that obj exists and is controlled by the cluster.
func expectOwned(ctx context.Context, c *baov1.OpenBaoCluster, obj client.Object, name string) {
	GinkgoHelper()
	Eventually(func() error { return k8s.Get(ctx, key(c.Namespace, name), obj) }, timeout, interval).Should(Succeed(), "%T %s", obj, name)
	Expect(obj.GetOwnerReferences()).To(ConsistOf(HaveField("UID", c.UID)), "%T %s must be owned by the cluster", obj, name)
	ref := obj.GetOwnerReferences()[0]
	Expect(ref.Controller).To(HaveValue(BeTrue()))
	Expect(ref.Kind).To(Equal("OpenBaoCluster"))
	Expect(obj.GetLabels()).To(HaveKeyWithValue(workload.LabelManagedBy, workload.ManagedByValue))
}

// markPodsReady simulates the kubelet: it creates the member pods the StatefulSet
// controller would create (envtest runs no controllers), marks them Ready, and
// reports the StatefulSet's status as current.
func markPodsReady(ctx context.Context, c *baov1.OpenBaoCluster, ready int32) {
	GinkgoHelper()
	sts := &appsv1.StatefulSet{}
	Expect(k8s.Get(ctx, key(c.Namespace, c.Name), sts)).To(Succeed())
	for i := range c.GetReplicas() {
		name := fmt.Sprintf("%s-%d", c.Name, i)
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx, key(c.Namespace, name), pod); err != nil {
			pod = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: sts.Spec.Template.Labels},
				Spec:       *sts.Spec.Template.Spec.DeepCopy(),
			}
			// The StatefulSet controller turns each claim template into a pod volume.
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}})
			Expect(k8s.Create(ctx, pod)).To(Succeed())
		}
		status := corev1.ConditionFalse
		if i < ready {
			status = corev1.ConditionTrue
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}
	sts.Status.ObservedGeneration = sts.Generation
	sts.Status.Replicas = c.GetReplicas()
	sts.Status.ReadyReplicas = ready
	Expect(k8s.Status().Update(ctx, sts)).To(Succeed())
}

// updateCluster changes the cluster's spec or metadata, retrying on conflicts with
// the controller's own writes.
func updateCluster(ctx context.Context, c *baov1.OpenBaoCluster, mutate func(*baov1.OpenBaoCluster)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := getCluster(ctx, c)
		mutate(cur)
		return k8s.Update(ctx, cur)
	})).To(Succeed())
}

func getCluster(ctx context.Context, c *baov1.OpenBaoCluster) *baov1.OpenBaoCluster {
	GinkgoHelper()
	got := &baov1.OpenBaoCluster{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
	return got
}

func condition(c *baov1.OpenBaoCluster, t baov1.ConditionType) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, string(t))
}

func eventReasons(ctx context.Context, c *baov1.OpenBaoCluster) []string {
	list := &eventsv1.EventList{}
	Expect(k8s.List(ctx, list, client.InNamespace(c.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == c.Name && e.Regarding.Kind == "OpenBaoCluster" {
			out = append(out, e.Reason)
		}
	}
	return out
}

// workloadVersions records the resourceVersion of every workload object.
func workloadVersions(ctx context.Context, c *baov1.OpenBaoCluster) map[string]string {
	GinkgoHelper()
	return workloadVersionsExcept(ctx, c, "")
}

// settleServing creates c, marks every member Ready and waits until the cluster has
// served (status.currentVersion) and the passes that follow land: self-initialization
// disabled and later joins made non-voters. Tests take their baseline after it.
func settleServing(ctx context.Context, c *baov1.OpenBaoCluster) {
	GinkgoHelper()
	ns := c.Namespace
	Expect(k8s.Create(ctx, c)).To(Succeed())
	Eventually(func() error { return k8s.Get(ctx, key(ns, c.Name), &appsv1.StatefulSet{}) }, timeout, interval).Should(Succeed())
	markPodsReady(ctx, c, c.GetReplicas())
	Eventually(func() string { return getCluster(ctx, c).Status.CurrentVersion }, timeout, interval).Should(Equal("2.4.0"))
	Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{}
		g.Expect(k8s.Get(ctx, key(ns, workload.NamesFor(c).ConfigMap()), cm)).To(Succeed())
		g.Expect(cm.Data[workload.InitializeKey]).To(Equal(workload.InitializeDisabled))
		g.Expect(cm.Data[workload.ConfigKey]).To(ContainSubstring("retry_join_as_non_voter = true"))
	}, timeout, interval).Should(Succeed())
}

// workloadVersionsExcept is workloadVersions without the object named skip
// ("svc/<name>").
func workloadVersionsExcept(ctx context.Context, c *baov1.OpenBaoCluster, skip string) map[string]string {
	GinkgoHelper()
	n := workload.NamesFor(c)
	objs := map[string]client.Object{
		"sts/" + n.StatefulSet():                     &appsv1.StatefulSet{},
		"cm/" + n.ConfigMap():                        &corev1.ConfigMap{},
		"secret/" + n.SealSecret():                   &corev1.Secret{},
		"secret/" + n.CASecret():                     &corev1.Secret{},
		"secret/" + n.TLSSecret():                    &corev1.Secret{},
		"svc/" + n.HeadlessService():                 &corev1.Service{},
		"svc/" + n.ClientService():                   &corev1.Service{},
		"svc/" + n.ActiveService():                   &corev1.Service{},
		"sa/" + n.ServiceAccount():                   &corev1.ServiceAccount{},
		"sa/" + n.ExecutorServiceAccount():           &corev1.ServiceAccount{},
		"role/" + n.ServiceRegistrationRole():        &rbacv1.Role{},
		"rolebinding/" + n.ServiceRegistrationRole(): &rbacv1.RoleBinding{},
		"pdb/" + n.PodDisruptionBudget():             &policyv1.PodDisruptionBudget{},
	}
	out := map[string]string{}
	for k, o := range objs {
		if k == skip {
			continue
		}
		name := k[strings.Index(k, "/")+1:]
		Expect(k8s.Get(ctx, key(c.Namespace, name), o)).To(Succeed(), k)
		out[k] = o.GetResourceVersion()
	}
	return out
}

var _ = Describe("OpenBaoCluster workload reconciler", func() {
	var ns string
	ctx := context.Background()

	BeforeEach(func() {
		ns = newNamespace(ctx)
		// One answer for every member: each says it is active, so that the cluster has
		// a leader (Available needs one; the Raft-truth rules have table tests of their
		// own in internal/app/openbaocluster).
		bao.SetDefaultHealth(openbao.Health{Initialized: true, Version: "2.4.0"})
		bao.SetDefaultReplication(openbao.Replication{AppendEntries: 1})
	})

	It("creates every workload object with the right content and owner", func() {
		c := newCluster(ns, "bao")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		n := workload.NamesFor(c)

		By("service accounts, and RBAC for service registration")
		for _, name := range []string{n.ServiceAccount(), n.ExecutorServiceAccount()} {
			expectOwned(ctx, c, &corev1.ServiceAccount{}, name)
		}
		role := &rbacv1.Role{}
		expectOwned(ctx, c, role, n.ServiceRegistrationRole())
		Expect(role.Rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"},
			ResourceNames: workload.MemberPodNames(c), Verbs: []string{"get", "patch"}}))
		Expect(role.Rules[0].ResourceNames).To(ContainElement(c.Name + "-0"))
		binding := &rbacv1.RoleBinding{}
		expectOwned(ctx, c, binding, n.ServiceRegistrationRole())
		Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: n.ServiceAccount(), Namespace: ns}))
		Expect(binding.RoleRef.Name).To(Equal(role.Name))

		By("a static-seal key that is not owned, so it outlives the cluster object")
		seal := &corev1.Secret{}
		Eventually(func() error { return k8s.Get(ctx, key(ns, n.SealSecret()), seal) }, timeout, interval).Should(Succeed())
		Expect(seal.OwnerReferences).To(BeEmpty())
		Expect(seal.Immutable).To(HaveValue(BeTrue()))
		Expect(string(seal.Data[workload.SealKeyKey])).To(MatchRegexp(`^[0-9a-f]{64}$`))

		By("a CA and a serving certificate covering every member and Service")
		ca := &corev1.Secret{}
		expectOwned(ctx, c, ca, n.CASecret())
		tlsSecret := &corev1.Secret{}
		expectOwned(ctx, c, tlsSecret, n.TLSSecret())
		Expect(tlsSecret.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(tlsSecret.Data[workload.CACertKey]).To(Equal(ca.Data[workload.CACertKey]))
		block, _ := pem.Decode(tlsSecret.Data[workload.TLSCertKey])
		Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(cert.DNSNames).To(ContainElements(
			"bao-0.bao-internal."+ns+".svc", "bao-1.bao-internal."+ns+".svc", "bao-2.bao-internal."+ns+".svc",
			"bao."+ns+".svc", "bao-active."+ns+".svc", "bao-internal."+ns+".svc"))
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(ca.Data[workload.CACertKey])).To(BeTrue())
		_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "bao-1.bao-internal." + ns + ".svc"})
		Expect(err).NotTo(HaveOccurred())

		By("config.hcl and initialize.hcl")
		cm := &corev1.ConfigMap{}
		expectOwned(ctx, c, cm, n.ConfigMap())
		cfg := cm.Data[workload.ConfigKey]
		for i := range 3 {
			Expect(cfg).To(ContainSubstring(fmt.Sprintf(`leader_api_addr     = "https://bao-%d.bao-internal.%s.svc:8200"`, i, ns)))
		}
		Expect(cfg).To(ContainSubstring(`performance_multiplier = 1`))
		Expect(cfg).To(ContainSubstring(`seal "static"`))
		Expect(cfg).To(ContainSubstring(`service_registration "kubernetes" {}`))
		Expect(cfg).To(ContainSubstring(`prometheus_retention_time`))
		Expect(cfg).To(ContainSubstring(`tls_cert_file   = "/openbao/tls/tls.crt"`))
		Expect(cm.Data[workload.InitializeKey]).To(Equal(workload.InitializeDisabled), "the requests are in the init Secret, not in a ConfigMap")
		Expect(cm.Annotations).To(HaveKeyWithValue(workload.AnnotationJWTAudience, "openbao.baokeeper.dev/"+ns+"/bao"))
		initSecret := &corev1.Secret{}
		expectOwned(ctx, c, initSecret, n.InitSecret())
		init := string(initSecret.Data[workload.InitializeKey])
		Expect(init).To(ContainSubstring(`path      = "sys/auth/baokeeper-jwt"`))
		Expect(init).To(ContainSubstring(`"bound_subject" = "system:serviceaccount:baokeeper-system:baokeeper"`))
		Expect(init).To(ContainSubstring(`"bound_subject" = "system:serviceaccount:` + ns + `:bao-executor"`))
		Expect(init).To(ContainSubstring(`"bound_audiences" = "openbao.baokeeper.dev/`+ns+`/bao"`), "an audience of the cluster's own")
		Eventually(func() string { return getCluster(ctx, c).Status.JWTAudience }, timeout, interval).Should(Equal("openbao.baokeeper.dev/" + ns + "/bao"))
		Expect(init).To(ContainSubstring(`BEGIN PUBLIC KEY`))
		Expect(init).To(MatchRegexp(`"bound_issuer" = "https?://`))

		By("headless, client and active Services, and a PodDisruptionBudget")
		headless := &corev1.Service{}
		expectOwned(ctx, c, headless, n.HeadlessService())
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue())
		clientSvc := &corev1.Service{}
		expectOwned(ctx, c, clientSvc, n.ClientService())
		Expect(clientSvc.Spec.Ports).To(ConsistOf(HaveField("Port", BeEquivalentTo(8200))))
		active := &corev1.Service{}
		expectOwned(ctx, c, active, n.ActiveService())
		Expect(active.Spec.Selector).To(HaveKeyWithValue("openbao-active", "true"))
		pdb := &policyv1.PodDisruptionBudget{}
		expectOwned(ctx, c, pdb, n.PodDisruptionBudget())
		Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))

		By("a StatefulSet that Kubernetes never rolls on its own")
		sts := &appsv1.StatefulSet{}
		expectOwned(ctx, c, sts, n.StatefulSet())
		Expect(sts.Spec.UpdateStrategy.Type).To(Equal(appsv1.OnDeleteStatefulSetStrategyType))
		Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.OrderedReadyPodManagement))
		Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
		Expect(sts.Spec.ServiceName).To(Equal(n.HeadlessService()))
		pod := sts.Spec.Template.Spec
		Expect(pod.TerminationGracePeriodSeconds).To(HaveValue(BeNumerically(">=", 20)))
		Expect(pod.ServiceAccountName).To(Equal(n.ServiceAccount()))
		Expect(pod.Containers).To(HaveLen(1))
		ctr := pod.Containers[0]
		Expect(ctr.Image).To(Equal("ghcr.io/openbao/openbao:2.4.0"))
		Expect(ctr.ReadinessProbe.HTTPGet.Path).To(Equal("/v1/sys/health?standbyok=true&perfstandbyok=true"))
		Expect(ctr.ReadinessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS))
		Expect(ctr.VolumeMounts).To(ContainElement(HaveField("MountPath", "/openbao/data")))
		Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
		Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))

		By("status: Initializing while no member is Ready")
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseInitializing))
		got := getCluster(ctx, c)
		Expect(got.Status.Message).To(ContainSubstring("Waiting for bao-0"))
		Expect(condition(got, baov1.ConditionInitialized).Status).To(Equal(metav1.ConditionFalse))
		Expect(condition(got, baov1.ConditionTLSReady).Status).To(Equal(metav1.ConditionTrue))
		Expect(eventReasons(ctx, c)).To(ContainElement(string(baov1.EventCreated)))
	})

	It("changes nothing on a second reconcile", func() {
		c := newCluster(ns, "stable")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseInitializing))
		// The suite's manager reconciles this cluster too (the workload and the
		// upgrade manager, each writing its part of status once after creation):
		// what is measured is this reconciler's second pass, once theirs are done
		// (failed once in CI: a write of the manager's landed between the two reads).
		var statusBefore string
		Eventually(func(g Gomega) {
			rv := getCluster(ctx, c).ResourceVersion
			g.Consistently(func() string { return getCluster(ctx, c).ResourceVersion }, 2*time.Second, interval).Should(Equal(rv))
			statusBefore = rv
		}, timeout, interval).Should(Succeed())
		before := workloadVersions(ctx, c)

		r := newReconciler()
		for range 2 {
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.RequeueAfter).To(Equal(app.StatusRefresh), "the status refresh of an idle cluster is its only timer (renewal is days away)")
		}
		Expect(workloadVersions(ctx, c)).To(Equal(before))
		Expect(getCluster(ctx, c).ResourceVersion).To(Equal(statusBefore), "an unchanged status is not written")
	})

	It("reaches Running when every member is Ready, seeds currentVersion and disables self-initialization", func() {
		c := newCluster(ns, "run")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, key(ns, c.Name), &appsv1.StatefulSet{}) }, timeout, interval).Should(Succeed())

		By("one member Ready: initialized, still Initializing")
		markPodsReady(ctx, c, 1)
		Eventually(func() *metav1.Condition { return condition(getCluster(ctx, c), baov1.ConditionInitialized) }, timeout, interval).
			Should(HaveField("Status", metav1.ConditionTrue))
		Expect(getCluster(ctx, c).Status.Phase).To(Equal(baov1.PhaseInitializing))
		Expect(getCluster(ctx, c).Status.Message).To(ContainSubstring("Waiting for run-1"))

		By("every member Ready")
		markPodsReady(ctx, c, 3)
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseRunning))
		// currentVersion is seeded by the upgrade manager, a second controller, and the
		// message that names it is written by the workload reconciler on its next pass.
		Eventually(func() string { return getCluster(ctx, c).Status.Message }, timeout, interval).
			Should(Equal("3 of 3 members Ready, running 2.4.0"))
		got := getCluster(ctx, c)
		Expect(got.Status.CurrentVersion).To(Equal("2.4.0"))
		Expect(got.Status.ReadyMembers).To(BeEquivalentTo(3))
		Expect(got.Status.Members).To(HaveEach(HaveField("Version", "2.4.0")))
		Expect(condition(got, baov1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(got, baov1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		Expect(condition(got, baov1.ConditionProgressing).Reason).To(Equal(string(baov1.ReasonReconciled)))
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement(string(baov1.EventRunning)))

		initSecret := &corev1.Secret{}
		Eventually(func() string {
			Expect(k8s.Get(ctx, key(ns, workload.NamesFor(c).InitSecret()), initSecret)).To(Succeed())
			return string(initSecret.Data[workload.InitializeKey])
		}, timeout, interval).Should(Equal(workload.InitializeDisabled), "no request, and no credential in one, stays once the cluster initialized")

		By("a member lost: Degraded, still Available")
		markPodsReady(ctx, c, 2)
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseDegraded))
		got = getCluster(ctx, c)
		Expect(condition(got, baov1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(got, baov1.ConditionDegraded).Message).To(ContainSubstring("run-2"))
		Expect(condition(got, baov1.ConditionInitialized).Status).To(Equal(metav1.ConditionTrue), "Initialized is sticky")
	})

	It("refuses a downgrade and an image mismatch with a condition and an event, changing nothing", func() {
		c := newCluster(ns, "policy")
		settleServing(ctx, c)
		before := workloadVersions(ctx, c)

		By("a downgrade below status.currentVersion")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Spec.Version = "2.3.9"
		})
		Eventually(func() *metav1.Condition { return condition(getCluster(ctx, c), baov1.ConditionSpecValid) }, timeout, interval).
			Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "DowngradeRefused")))
		got := getCluster(ctx, c)
		Expect(got.Status.Message).To(ContainSubstring("spec.version"))
		Expect(got.Status.Message).To(ContainSubstring("2.4.0"))
		Expect(condition(got, baov1.ConditionDegraded).Reason).To(Equal(string(baov1.ReasonSpecRefused)))
		Expect(got.Status.Phase).To(Equal(baov1.PhaseRunning), "the cluster still serves")
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement(string(baov1.EventSpecRefused)))
		Expect(workloadVersions(ctx, c)).To(Equal(before))

		By("an image whose tag disagrees with spec.version")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Spec.Version = "2.4.0"
			cur.Spec.Image = "ghcr.io/openbao/openbao:2.4.1"
		})
		Eventually(func() string { return condition(getCluster(ctx, c), baov1.ConditionSpecValid).Reason }, timeout, interval).
			Should(Equal("ImageVersionMismatch"))
		Expect(getCluster(ctx, c).Status.Message).To(ContainSubstring("spec.image"))
		Expect(workloadVersions(ctx, c)).To(Equal(before))

		// docs/bad-inputs.md rows 7-10 and 86: refused images change nothing.
		for _, bad := range []struct {
			row, image, executor, reason, words string
		}{
			{"7", "openbao/openbao:latest", "", "FloatingImage", "is tagged latest"},
			{"8", "registry:5000/openbao/openbao", "", "FloatingImage", "has no tag"},
			{"9", "OpenBao/openbao:2.4.0", "", "InvalidImage", "must be lowercase"},
			{"10", "openbao/openbao :2.4.0", "", "InvalidImage", "whitespace"},
			{"86", "", "ghcr.io/baokeeper/baokeeper:latest", "FloatingImage", "is not pinned"},
		} {
			By(fmt.Sprintf("bad-inputs row %s: image %q, executor image %q", bad.row, bad.image, bad.executor))
			updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
				cur.Spec.Image, cur.Spec.Upgrade.Executor.Image = bad.image, bad.executor
			})
			Eventually(func(g Gomega) {
				got := getCluster(ctx, c)
				cond := condition(got, baov1.ConditionSpecValid)
				g.Expect(cond.Reason).To(Equal(bad.reason), got.Status.Message)
				g.Expect(got.Status.Message).To(ContainSubstring(bad.words))
			}, timeout, interval).Should(Succeed())
			Expect(workloadVersions(ctx, c)).To(Equal(before), "row %s: nothing changed", bad.row)
		}

		By("fixing the spec clears the refusal")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Image, cur.Spec.Upgrade.Executor.Image = "", "" })
		Eventually(func() string { return condition(getCluster(ctx, c), baov1.ConditionSpecValid).Reason }, timeout, interval).
			Should(Equal(string(baov1.ReasonSpecAccepted)))
		Expect(condition(getCluster(ctx, c), baov1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	})

	// docs/bad-inputs.md row 36: a 1-member cluster cannot restart its only voter for a
	// version change. (Row 74, a rollout, needs the StatefulSet controller's revisions,
	// which envtest does not run.)
	It("holds a version change of a 1-member cluster at precheck Redundancy, changing nothing, until it is withdrawn", func() {
		c := newCluster(ns, "single", withReplicas(1))
		settleServing(ctx, c)
		// The StatefulSet controller (absent here) would catch its status up with
		// those passes' changes.
		markPodsReady(ctx, c, 1)
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseRunning))
		before := workloadVersions(ctx, c)
		heldAt := func(words string, unchanged func() any, want any) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				got := getCluster(ctx, c)
				g.Expect(got.Status.Upgrade).NotTo(BeNil(), got.Status.Message)
				g.Expect(got.Status.Upgrade.Plan).NotTo(BeNil())
				g.Expect(got.Status.Upgrade.Plan.Prechecks).To(ContainElement(And(
					HaveField("Name", "Redundancy"), HaveField("Result", baov1.PrecheckFailed), HaveField("Message", ContainSubstring(words)))))
			}, timeout, interval).Should(Succeed())
			Consistently(unchanged, 2*time.Second, 200*time.Millisecond).Should(Equal(want), "nothing is touched while Redundancy fails")
		}
		By("row 36: a version change")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Version = "2.4.1" })
		heldAt("cannot change version without taking down its only voter", func() any { return workloadVersions(ctx, c) }, before)
		By("back to 2.4.0: the upgrade is cancelled")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Version = "2.4.0" })
		Eventually(func() *baov1.UpgradeStatus { return getCluster(ctx, c).Status.Upgrade }, timeout, interval).Should(BeNil())
	})

	It("plans an upgrade, warns about a skipped minor version, and touches nothing while a precheck fails", func() {
		c := newCluster(ns, "up")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(func() error { return k8s.Get(ctx, key(ns, c.Name), &appsv1.StatefulSet{}) }, timeout, interval).Should(Succeed())
		markPodsReady(ctx, c, 3)
		Eventually(func() string { return getCluster(ctx, c).Status.CurrentVersion }, timeout, interval).Should(Equal("2.4.0"))

		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Spec.Version = "2.6.0"
		})
		By("the upgrade is planned but blocked by its prechecks: no autopilot read, no snapshot target")
		Eventually(func() string { return condition(getCluster(ctx, c), baov1.ConditionProgressing).Reason }, timeout, interval).
			Should(Equal(string(baov1.ReasonUpgradeBlocked)))
		got := getCluster(ctx, c)
		Expect(got.Status.Phase).To(Equal(baov1.PhaseUpgrading))
		Expect(got.Status.Message).To(ContainSubstring("upgrade to 2.6.0 waits for precheck"))
		Expect(got.Status.Upgrade).NotTo(BeNil())
		Expect(got.Status.Upgrade.Plan.Prechecks).To(ContainElement(And(
			HaveField("Name", "SnapshotTarget"), HaveField("Result", baov1.PrecheckFailed))))
		Expect(got.Status.Upgrade.Plan.UndoPath).To(ContainSubstring("set spec.version back to 2.4.0"))
		Consistently(func() string {
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, key(ns, c.Name), sts)).To(Succeed())
			return sts.Spec.Template.Spec.Containers[0].Image
		}, 2*time.Second, 200*time.Millisecond).Should(Equal("ghcr.io/openbao/openbao:2.4.0"), "nothing is touched while a precheck fails")
		Expect(getCluster(ctx, c).Status.CurrentVersion).To(Equal("2.4.0"))
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement("UpgradeBlocked"))
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement("MinorVersionSkip"),
			"2.4.0 to 2.6.0 skips 2.5: allowed, with a warning event")

		By("a new spec.version before any member was touched re-plans the upgrade")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Version = "2.5.0" })
		Eventually(func() string {
			up := getCluster(ctx, c).Status.Upgrade
			if up == nil {
				return ""
			}
			return up.TargetVersion
		}, timeout, interval).Should(Equal("2.5.0"))
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement("UpgradeCancelled"))

		By("setting spec.version back cancels the upgrade: nothing left to do")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Spec.Version = "2.4.0" })
		Eventually(func() *baov1.UpgradeStatus { return getCluster(ctx, c).Status.Upgrade }, timeout, interval).Should(BeNil(), func() string {
			g := getCluster(ctx, c)
			return fmt.Sprintf("%s %+v", g.Status.Message, g.Status.Upgrade)
		})
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseRunning))
		Expect(getCluster(ctx, c).Status.CurrentVersion).To(Equal("2.4.0"))
		sts := &appsv1.StatefulSet{}
		Expect(k8s.Get(ctx, key(ns, c.Name), sts)).To(Succeed())
		Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/openbao/openbao:2.4.0"))
	})

	It("leaves every workload object alone while break-glass is active, and repairs again once the nonce is acknowledged", func() {
		c := newCluster(ns, "frozen")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		n := workload.NamesFor(c)
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseInitializing))

		By("entering break-glass as the upgrade manager would")
		now := metav1.Now()
		// Under the upgrade manager's field manager, which owns status.breakGlass; its
		// writes are conditional on the read, so a write of the running reconcilers in
		// between is a Conflict: read again and retry, as the reconciler does.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := getCluster(ctx, c)
			cur.Status.BreakGlass = &baov1.BreakGlassStatus{Active: true, Reason: baov1.BreakGlassQuorumLost,
				Message: "2 of 3 voters do not answer", Nonce: "0123456789abcdef0123456789abcdef", EnteredAt: &now}
			_, err := statusapply.Apply(ctx, k8s, statusapply.Upgrade(), cur, nil)
			return err
		})).To(Succeed())
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseBreakGlass))
		Expect(getCluster(ctx, c).Status.Message).To(ContainSubstring("every automation of this cluster stopped"))

		By("deleting a Service and changing the spec: nothing is repaired or applied")
		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, key(ns, n.ActiveService()), svc)).To(Succeed())
		Expect(k8s.Delete(ctx, svc)).To(Succeed())
		versions := workloadVersionsExcept(ctx, c, "svc/"+n.ActiveService())
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		})
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, n.ActiveService()), &corev1.Service{}))).To(BeTrue(), "the active Service stays deleted")
			g.Expect(workloadVersionsExcept(ctx, c, "svc/"+n.ActiveService())).To(Equal(versions), "no object changes")
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

		By("acknowledging a wrong nonce: still stopped")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Annotations = map[string]string{baov1.AnnotationBreakGlassAck: "wrong"}
		})
		Eventually(func() []string { return eventReasons(ctx, c) }, timeout, interval).Should(ContainElement("BreakGlassAckRefused"))
		Expect(getCluster(ctx, c).Status.BreakGlass.Active).To(BeTrue())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, key(ns, n.ActiveService()), &corev1.Service{}))).To(BeTrue())

		By("acknowledging the current nonce: the workload is repaired and the spec applied")
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Annotations = map[string]string{baov1.AnnotationBreakGlassAck: "0123456789abcdef0123456789abcdef"}
		})
		Eventually(func(g Gomega) {
			cur := getCluster(ctx, c)
			g.Expect(cur.Status.BreakGlass.Active).To(BeFalse(), "acknowledged: %+v, requests %+v", cur.Status.BreakGlass, cur.Status.Requests)
			// In the same status read: one pass may still show the old phase (seen
			// once under load on 2026-12-05), so both are awaited together.
			g.Expect(cur.Status.Phase).NotTo(Equal(baov1.PhaseBreakGlass), "the phase follows the acknowledgement")
			g.Expect(k8s.Get(ctx, key(ns, n.ActiveService()), &corev1.Service{})).To(Succeed(), "the active Service is re-created: %s", cur.Status.Message)
		}, timeout, interval).Should(Succeed())
		bg := getCluster(ctx, c).Status.BreakGlass
		Expect(bg.Active).To(BeFalse())
		Expect(bg.AcknowledgedAt).NotTo(BeNil())
		Expect(bg.AcknowledgedBy).NotTo(BeEmpty(), "the field manager that set the annotation")
	})

	It("re-creates a deleted object and never replaces the seal key of an initialized cluster", func() {
		c := newCluster(ns, "repair")
		Expect(k8s.Create(ctx, c)).To(Succeed())
		n := workload.NamesFor(c)
		svc := &corev1.Service{}
		Eventually(func() error { return k8s.Get(ctx, key(ns, n.ActiveService()), svc) }, timeout, interval).Should(Succeed())
		Expect(k8s.Delete(ctx, svc)).To(Succeed())
		Eventually(func() types.UID {
			fresh := &corev1.Service{}
			if err := k8s.Get(ctx, key(ns, n.ActiveService()), fresh); err != nil {
				return ""
			}
			return fresh.UID
		}, timeout, interval).ShouldNot(Or(BeEmpty(), Equal(svc.UID)))

		markPodsReady(ctx, c, 3)
		Eventually(func() baov1.ClusterPhase { return getCluster(ctx, c).Status.Phase }, timeout, interval).Should(Equal(baov1.PhaseRunning))
		seal := &corev1.Secret{}
		Expect(k8s.Get(ctx, key(ns, n.SealSecret()), seal)).To(Succeed())
		Expect(k8s.Delete(ctx, seal)).To(Succeed())
		// The seal Secret is not owned, so nudge a pass with an annotation.
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) {
			cur.Annotations = map[string]string{"test/nudge": "1"}
		})
		Eventually(func() string { return condition(getCluster(ctx, c), baov1.ConditionDegraded).Reason }, timeout, interval).
			Should(Equal(string(baov1.ReasonSealKeyMissing)))
		Expect(getCluster(ctx, c).Status.Message).To(ContainSubstring("restore the Secret from your backup"))
		Consistently(func() error { return k8s.Get(ctx, key(ns, n.SealSecret()), &corev1.Secret{}) }, 2*time.Second, 200*time.Millisecond).
			ShouldNot(Succeed())
	})

	It("starts a cluster from a snapshot with one member, the source's seal key and no client Service; without that key it creates nothing", func() {
		c := newCluster(ns, "fromsnap")
		c.Spec.Bootstrap = &baov1.BootstrapSpec{FromSnapshot: baov1.SnapshotSource{
			S3:  baov1.S3Target{Endpoint: "https://s3.example.com", Bucket: "snaps", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}},
			Key: ns + "/old/x.snap", SHA256: strings.Repeat("a", 64), SourceCluster: "old"}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		n := workload.NamesFor(c)

		By("without the source's seal key: Degraded, saying which Secret, and no StatefulSet")
		Eventually(func(g Gomega) {
			cur := getCluster(ctx, c)
			cond := condition(cur, baov1.ConditionDegraded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(string(baov1.ReasonSealKeyMissing)))
			g.Expect(cond.Message).To(ContainSubstring("in Secret old-seal"))
			g.Expect(cond.Message).To(ContainSubstring("Nothing was created"))
		}, timeout, interval).Should(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, key(ns, n.StatefulSet()), &appsv1.StatefulSet{}))
		}, 2*time.Second, 200*time.Millisecond).Should(BeTrue())

		By("with it: the key is copied, one member, no client Service")
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old-seal"},
			Data: map[string][]byte{workload.SealKeyKey: []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")}})).To(Succeed())
		updateCluster(ctx, c, func(cur *baov1.OpenBaoCluster) { cur.Annotations = map[string]string{"test/nudge": "1"} })
		sts := &appsv1.StatefulSet{}
		Eventually(func() error { return k8s.Get(ctx, key(ns, n.StatefulSet()), sts) }, timeout, interval).Should(Succeed())
		Expect(*sts.Spec.Replicas).To(Equal(int32(1)), "the snapshot is restored into one member before any other joins")
		seal := &corev1.Secret{}
		Expect(k8s.Get(ctx, key(ns, n.SealSecret()), seal)).To(Succeed())
		Expect(string(seal.Data[workload.SealKeyKey])).To(Equal("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"))
		Expect(k8s.Get(ctx, key(ns, n.HeadlessService()), &corev1.Service{})).To(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, key(ns, n.ClientService()), &corev1.Service{})) &&
				apierrors.IsNotFound(k8s.Get(ctx, key(ns, n.ActiveService()), &corev1.Service{}))
		}, 2*time.Second, 200*time.Millisecond).Should(BeTrue(), "no client writes into data the restore replaces: neither the client nor the active Service")
		Expect(getCluster(ctx, c).Status.Phase).NotTo(Equal(baov1.PhaseRunning))
	})
})

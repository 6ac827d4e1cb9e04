//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/baokeeper/baokeeper/test/rbaccheck"
	"github.com/baokeeper/baokeeper/test/rig"
)

// unusedGrants are the grants of config/rbac/role.yaml that a run of the suite does
// not use, each with the reason it stays. The check fails on a grant that is neither
// used nor listed here, and on an entry that is used after all or no longer granted.
var unusedGrants = map[rbaccheck.Grant]string{
	{Resource: "pods", Verb: "get"}:                                           "held so that the operator may create the service-registration Role, which grants it on the cluster's member pods (RBAC refuses granting what one does not hold)",
	{Resource: "pods", Verb: "patch"}:                                         "held for the same reason as get: the service-registration Role grants it on the cluster's member pods",
	{Resource: "events", Verb: "patch"}:                                       "core/v1 events come from leader election's recorder, which patches the count of a repeated event",
	{Group: "batch", Resource: "jobs", Verb: "delete"}:                        "a Job left by an earlier attempt or upgrade is deleted before its name is reused; no run of the suite leaves one",
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "create"}: networkPolicyUnused,
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "get"}:    networkPolicyUnused,
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "patch"}:  networkPolicyUnused,
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "delete"}: networkPolicyUnused,
	{Resource: "serviceaccounts", Verb: "delete"}:                             "a restore whose source cluster is gone creates the source's executor account for its rebind and deletes it afterwards; the suite restores from a source that exists (its own account is used and kept)",
}

// networkPolicyUnused is why the NetworkPolicy grants go unused in a run: no e2e
// cluster sets spec.networkPolicy, since the rig enforces no NetworkPolicy and a spec
// could prove only that the object exists; envtest (networkpolicy_test.go) has the
// operator create, change and delete it, and workload TestNetworkPolicy evaluates
// what it admits.
const networkPolicyUnused = "no e2e cluster sets spec.networkPolicy (the rig enforces none); envtest networkpolicy_test.go creates, changes and deletes it"

// explainUnused adds the reasons that follow from how the operator reads and writes,
// to the grants a run did not use:
//   - list: the cache's informers start with a watch-list (a watch that streams the
//     initial objects) where the server supports it, and fall back to LIST otherwise
//     or after a watch expired;
//   - create on what is written by server-side apply: an apply that creates the object
//     is audited as patch but authorized as create too.
func explainUnused(res rbaccheck.Result, explained map[rbaccheck.Grant]string) map[rbaccheck.Grant]string {
	out := map[rbaccheck.Grant]string{}
	for g, why := range explained {
		out[g] = why
	}
	for _, g := range res.Unused {
		switch {
		case g.Verb == "list":
			out[g] = "the cache's informer lists before it watches when the server does not stream the initial list"
		case g.Verb == "create" && res.Used[rbaccheck.Grant{Group: g.Group, Resource: g.Resource, Verb: "patch"}] > 0:
			out[g] = "written by server-side apply: an apply that creates the object needs create, though the audit log records patch"
		case g == rbaccheck.Grant{Resource: "pods", Verb: "delete"} && res.Used[rbaccheck.Grant{Resource: "pods/eviction", Verb: "create"}] > 0:
			out[g] = "a Ready member is evicted; a member that is not Ready (or the one member of a 1-member cluster) is deleted, which a run where every member taken down was Ready never needs (adminops takeDownBy)"
		}
	}
	return out
}

// Serial: it reads the audit log after every other spec of the run, on process 1.
var _ = Describe("The operator's role", Serial, SpecPriority(-1000), func() {
	It("grants exactly what the operator used during this run (the kube-apiserver's audit log), or says why", func() {
		b, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		role := &rbacv1.ClusterRole{}
		Expect(yaml.Unmarshal(b, role)).To(Succeed())
		f, err := os.Open(filepath.Join(rigDir, rig.AuditLogFile))
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		reqs, err := rbaccheck.ReadAudit(f, "system:serviceaccount:"+operatorNS+":baokeeper")
		Expect(err).NotTo(HaveOccurred())
		Expect(reqs).NotTo(BeEmpty(), "the audit log has no request of the operator")
		grants := rbaccheck.Grants(role.Rules)
		res := rbaccheck.Check(reqs, grants, explainUnused(rbaccheck.Check(reqs, grants, unusedGrants), unusedGrants))

		var used []string
		for g, n := range res.Used {
			used = append(used, g.String()+" ×"+strconv.Itoa(n))
		}
		slices.Sort(used)
		GinkgoWriter.Printf("%d requests of the operator; grants used:\n  %s\n", len(reqs), strings.Join(used, "\n  "))
		for g, why := range res.Explained {
			GinkgoWriter.Printf("not used in this run, kept: %s (%s)\n", g, why)
		}
		Expect(res.Denied).To(BeEmpty(), "requests the API server denied: the role lacks what the code does")
		Expect(res.Unused).To(BeEmpty(), "grants no request used: drop them from the kubebuilder:rbac markers, or list them in unusedGrants with the reason")
		Expect(res.Stale).To(BeEmpty(), "entries of unusedGrants that were used, or are not granted: remove them")
	})
})

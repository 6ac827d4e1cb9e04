package rbaccheck

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

const sa = "system:serviceaccount:baokeeper-system:baokeeper"

const log = `{"kind":"Event","verb":"list","requestURI":"/api/v1/pods?limit=500","user":{"username":"` + sa + `"},"objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"code":200}}
{"kind":"Event","verb":"patch","requestURI":"/apis/openbao.baokeeper.dev/v1alpha1/namespaces/ns/openbaoclusters/bao/status","user":{"username":"` + sa + `"},"objectRef":{"resource":"openbaoclusters","subresource":"status","namespace":"ns","apiGroup":"openbao.baokeeper.dev"},"responseStatus":{"code":200}}
{"kind":"Event","verb":"get","requestURI":"/openid/v1/jwks","user":{"username":"` + sa + `"},"responseStatus":{"code":200}}
{"kind":"Event","verb":"delete","requestURI":"/api/v1/namespaces/ns/secrets/x","user":{"username":"` + sa + `"},"objectRef":{"resource":"secrets","namespace":"ns"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"forbid"}}
{"kind":"Event","verb":"create","requestURI":"/api/v1/namespaces/gone/pods","user":{"username":"` + sa + `"},"objectRef":{"resource":"pods","namespace":"gone"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"allow"}}
{"kind":"Event","verb":"get","requestURI":"/api/v1/namespaces/ns/pods/bao-0","user":{"username":"someone-else"},"objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":200}}
`

func TestReadAudit(t *testing.T) {
	g := NewWithT(t)
	reqs, err := ReadAudit(strings.NewReader(log), sa)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reqs).To(Equal([]Request{
		{Verb: "list", Grant: Grant{Resource: "pods", Verb: "list"}, Code: 200},
		{Verb: "patch", Grant: Grant{Group: "openbao.baokeeper.dev", Resource: "openbaoclusters/status", Verb: "patch"}, Namespace: "ns", Code: 200},
		{Verb: "get", Grant: Grant{URL: "/openid/v1/jwks", Verb: "get"}, Code: 200},
		{Verb: "delete", Grant: Grant{Resource: "secrets", Verb: "delete"}, Namespace: "ns", Code: 403, Forbidden: true},
		{Verb: "create", Grant: Grant{Resource: "pods", Verb: "create"}, Namespace: "gone", Code: 403},
	}), "only the user's requests, subresources and URLs kept apart; RBAC's refusals told from admission's")

	_, err = ReadAudit(strings.NewReader("not json\n"), sa)
	g.Expect(err).To(MatchError(ContainSubstring("line 1 is not an audit event")))
}

func TestCheck(t *testing.T) {
	g := NewWithT(t)
	grants := Grants([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "secrets"}, Verbs: []string{"list", "delete"}},
		{APIGroups: []string{"openbao.baokeeper.dev"}, Resources: []string{"openbaoclusters/status"}, Verbs: []string{"patch", "update"}},
		{NonResourceURLs: []string{"/openid/v1/jwks"}, Verbs: []string{"get"}},
	})
	g.Expect(grants).To(HaveLen(7))
	reqs, err := ReadAudit(strings.NewReader(log), sa)
	g.Expect(err).NotTo(HaveOccurred())
	explained := map[Grant]string{
		{Resource: "pods", Verb: "delete"}: "replacing a member",
		{Resource: "pods", Verb: "list"}:   "used after all",
		{Resource: "nodes", Verb: "get"}:   "no longer granted",
	}
	res := Check(reqs, grants, explained)
	g.Expect(res.Used).To(Equal(map[Grant]int{
		{Resource: "pods", Verb: "list"}: 1,
		{Group: "openbao.baokeeper.dev", Resource: "openbaoclusters/status", Verb: "patch"}: 1,
		{URL: "/openid/v1/jwks", Verb: "get"}:                                               1,
	}))
	g.Expect(res.Unused).To(ConsistOf(
		Grant{Resource: "secrets", Verb: "list"}, Grant{Resource: "secrets", Verb: "delete"},
		Grant{Group: "openbao.baokeeper.dev", Resource: "openbaoclusters/status", Verb: "update"}),
		"grants nobody used and nobody explained")
	g.Expect(res.Explained).To(HaveKeyWithValue(Grant{Resource: "pods", Verb: "delete"}, "replacing a member"))
	g.Expect(res.Denied).To(HaveLen(1), "RBAC's refusal is reported, not counted as a use; admission's 403 is neither")
	g.Expect(res.Stale).To(ConsistOf(Grant{Resource: "nodes", Verb: "get"}, Grant{Resource: "pods", Verb: "list"}),
		"explanations for grants used after all, or not granted, must go")
}

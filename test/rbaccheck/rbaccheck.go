// Package rbaccheck compares what a service account did, as the kube-apiserver's audit
// log records it, with what its role grants: least privilege, proven on a real API
// server instead of by reading the code.
//
//  1. ReadAudit reads the audit log's events (JSON lines) of one user.
//  2. Grants expands a role's rules into (group, resource, verb) and (URL, verb) pairs.
//  3. Check says which grants were used, which were not (each must be explained: a
//     path the run did not take, with the reason it is still needed), and which
//     requests the API server denied (the role lacks something the code does).
package rbaccheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Request is one audited request: a resource request, or a URL for a non-resource one.
type Request struct {
	Verb      string
	Grant     Grant
	Namespace string
	Code      int
	// Forbidden is true when RBAC refused it (the audit annotation
	// authorization.k8s.io/decision is "forbid"); a 403 from admission (say, an
	// object created in a namespace being deleted) is not RBAC's answer.
	Forbidden bool
}

// Grant is one permission: a verb on a resource (group, resource[/subresource]), or on
// a non-resource URL.
type Grant struct {
	Group, Resource, URL, Verb string
}

func (g Grant) String() string {
	if g.URL != "" {
		return g.Verb + " " + g.URL
	}
	if g.Group == "" {
		return g.Verb + " " + g.Resource
	}
	return g.Verb + " " + g.Resource + "." + g.Group
}

// event is the part of an audit.k8s.io/v1 Event that matters here.
type event struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations map[string]string `json:"annotations"`
}

// ReadAudit returns the requests of user in an audit log of JSON lines.
func ReadAudit(r io.Reader, user string) ([]Request, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	var out []Request
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("audit log line %d is not an audit event: %w", n, err)
		}
		if e.User.Username != user {
			continue
		}
		req := Request{Verb: e.Verb, Forbidden: e.Annotations["authorization.k8s.io/decision"] == "forbid"}
		if e.ResponseStatus != nil {
			req.Code = e.ResponseStatus.Code
		}
		if o := e.ObjectRef; o != nil && o.Resource != "" {
			res := o.Resource
			if o.Subresource != "" {
				res += "/" + o.Subresource
			}
			req.Grant, req.Namespace = Grant{Group: o.APIGroup, Resource: res, Verb: e.Verb}, o.Namespace
		} else {
			u, err := url.Parse(e.RequestURI)
			if err != nil {
				return nil, fmt.Errorf("audit log line %d: request URI %q: %w", n, e.RequestURI, err)
			}
			req.Grant = Grant{URL: u.Path, Verb: e.Verb}
		}
		out = append(out, req)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the audit log: %w", err)
	}
	return out, nil
}

// Grants expands rules into single grants, sorted by String.
func Grants(rules []rbacv1.PolicyRule) []Grant {
	var out []Grant
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out = append(out, Grant{URL: u, Verb: v})
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					out = append(out, Grant{Group: g, Resource: res, Verb: v})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Grant) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// Result is what Check found.
type Result struct {
	// Used counts the requests each grant allowed.
	Used map[Grant]int
	// Unused are grants no request used and no explanation covers.
	Unused []Grant
	// Explained are grants no request used, with the reason they are kept.
	Explained map[Grant]string
	// Denied are requests RBAC refused: the role lacks them.
	Denied []Request
	// Stale are explanations for grants that were used after all, or that the role
	// does not grant: the list must shrink with the code.
	Stale []Grant
}

// Check compares requests with grants; explained gives the reason for each grant the
// run is not expected to use.
func Check(reqs []Request, grants []Grant, explained map[Grant]string) Result {
	res := Result{Used: map[Grant]int{}, Explained: map[Grant]string{}}
	for _, r := range reqs {
		if r.Forbidden {
			res.Denied = append(res.Denied, r)
			continue
		}
		if slices.Contains(grants, r.Grant) {
			res.Used[r.Grant]++
		}
	}
	for _, g := range grants {
		if res.Used[g] > 0 {
			continue
		}
		if why, ok := explained[g]; ok {
			res.Explained[g] = why
			continue
		}
		res.Unused = append(res.Unused, g)
	}
	for g := range explained {
		if res.Used[g] > 0 || !slices.Contains(grants, g) {
			res.Stale = append(res.Stale, g)
		}
	}
	slices.SortFunc(res.Stale, func(a, b Grant) int { return strings.Compare(a.String(), b.String()) })
	return res
}

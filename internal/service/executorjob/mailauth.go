package executorjob

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/upgrade"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// Who may ask the executor for what (docs/design/executor-authority.md).
//
// The mailbox is a ConfigMap, and anyone who may patch ConfigMaps in the namespace
// may write into it. So nothing in it is trusted for what it says:
//
//   - A request names a step (its name, operation, step and member) and nothing
//     else. The executor runs it only when it is the current step that the
//     cluster's status, written by the operator alone, persists for the executor's
//     own operation (Authorize), and builds the step's arguments itself from its
//     Job's flags and that status (StepArgs): the addresses of the cluster's own
//     members, the CA and token files of its pod, a timeout it caps.
//   - Requests and answers carry an HMAC under the operation's key, which the
//     operator keeps in a Secret of its own (workload.Names.ExecutorKeys) and mounts
//     into that operation's executor only. The operator signs its requests and
//     checks every answer; the executor signs its answers and checks every request.
//     An entry that does not verify is not the operator's or the executor's: the
//     operator drops it from the mailbox and reports it (Trusted lists it).

// KeyBytes is the length of an operation's mailbox key.
const KeyBytes = 32

// NewKey draws an operation's mailbox key from rand (crypto/rand).
func NewKey(rand io.Reader) ([]byte, error) {
	key := make([]byte, KeyBytes)
	if _, err := io.ReadFull(rand, key); err != nil {
		return nil, fmt.Errorf("failed to draw a mailbox key: %w", err)
	}
	return key, nil
}

// PlannedStep is a membership step that the cluster's status persists as the current
// step of an operation: what the executor may run, and nothing else.
type PlannedStep struct {
	// Operation is the operation's ID (status.upgrade.id, status.scaling.id).
	Operation string
	// Name is the name of the step's request (the Job it stands for, JobName).
	Name string
	// Step is the LabelStep value: StepStepDown, StepPromote, StepDemote or
	// StepRemovePeer.
	Step string
	// Member is the member the step acts on.
	Member string
}

// mailedStepOf is the LabelStep value of the executor step that carries out a
// persisted step action, and false for an action that no membership step carries out
// (a snapshot, a validation hook, a pod deletion).
func mailedStepOf(a baov1.StepAction) (string, bool) {
	switch a {
	case upgrade.StepTransferLeadership:
		return StepStepDown, true
	case upgrade.StepRemoveMember:
		return StepRemovePeer, true
	case upgrade.StepDemoteMember:
		return StepDemote, true
	case upgrade.StepPromoteMember, upgrade.StepReplaceMember, baov1.StepAddMember, baov1.StepRejoinMember:
		return StepPromote, true
	}
	return "", false
}

// PlannedSteps are the membership steps the cluster's status persists as current:
// the current step of the upgrade (rolling), of its blue-green phase and of a
// scaling, each once its attempt is counted.
func PlannedSteps(c *baov1.OpenBaoCluster) []PlannedStep {
	var out []PlannedStep
	add := func(opID string, s *baov1.UpgradeStep) {
		if opID == "" || s == nil || s.Attempts <= 0 || s.Pod == "" {
			return
		}
		step, ok := mailedStepOf(s.Action)
		if !ok {
			return
		}
		out = append(out, PlannedStep{Operation: opID, Name: JobName(c, step, opID, s.Pod, s.Attempts), Step: step, Member: s.Pod})
	}
	st := &c.Status
	if up := st.Upgrade; up != nil {
		add(up.ID, up.CurrentStep)
		if bg := st.BlueGreen; bg != nil {
			add(up.ID, bg.CurrentStep)
		}
	}
	if sc := st.Scaling; sc != nil {
		add(sc.ID, sc.CurrentStep)
	}
	return out
}

// Operations are the IDs of the operations the cluster's status runs: the only ones
// that get an executor.
func Operations(c *baov1.OpenBaoCluster) []string {
	var out []string
	if up := c.Status.Upgrade; up != nil && up.ID != "" {
		out = append(out, up.ID)
	}
	if sc := c.Status.Scaling; sc != nil && sc.ID != "" {
		out = append(out, sc.ID)
	}
	return out
}

// Authorize checks the request named name against the cluster's status, for the
// executor of operation opID: it must be that operation's current membership step,
// for the same step and member. The step it returns is what runs (StepArgs).
func Authorize(c *baov1.OpenBaoCluster, opID, name string, req Request) (PlannedStep, error) {
	if req.Operation != opID {
		return PlannedStep{}, fmt.Errorf("request %s is for operation %q, and this executor serves operation %s only", name, req.Operation, opID)
	}
	planned := PlannedSteps(c)
	i := slices.IndexFunc(planned, func(p PlannedStep) bool { return p.Name == name })
	if i < 0 {
		var current []string
		for _, p := range planned {
			if p.Operation == opID {
				current = append(current, p.Name)
			}
		}
		what := "no membership step"
		if len(current) > 0 {
			what = strings.Join(current, ", ")
		}
		return PlannedStep{}, fmt.Errorf("request %s is not the current step of operation %s in the status of OpenBaoCluster %s/%s, which plans %s",
			name, opID, c.Namespace, c.Name, what)
	}
	p := planned[i]
	switch {
	case p.Operation != opID:
		return PlannedStep{}, fmt.Errorf("request %s is a step of operation %s, and this executor serves operation %s only", name, p.Operation, opID)
	case req.Step != p.Step || req.Member != p.Member:
		return PlannedStep{}, fmt.Errorf("request %s asks for %s of %q, and the status plans %s of %s", name, req.Step, req.Member, p.Step, p.Member)
	}
	return p, nil
}

// StepMembers are the addresses of the cluster's members that the executor asks for
// the active node: every member of blue and green during a blue-green upgrade (the
// leader may be on either side), else every ordinal the serving StatefulSet has or
// may have during a scaling. Only the cluster's own members: a step's addresses never
// come from a request, so the executor's token goes nowhere else.
func StepMembers(c *baov1.OpenBaoCluster) []string {
	if bg := c.Status.BlueGreen; bg != nil {
		return append(SetAddresses(c, bg.Blue), SetAddresses(c, bg.Green)...)
	}
	n := c.GetReplicas()
	if sc := c.Status.Scaling; sc != nil {
		n = max(n, sc.FromReplicas, sc.TargetReplicas)
	}
	return MemberAddressesN(c, min(n, workload.MaxMembers))
}

// SetAddresses are the API addresses of one StatefulSet's members.
func SetAddresses(c *baov1.OpenBaoCluster, set baov1.MemberSet) []string {
	n := workload.NamesFor(c).ForStatefulSet(set.StatefulSet)
	out := make([]string, 0, max(set.Replicas, 0))
	for i := range min(set.Replicas, workload.MaxMembers) {
		out = append(out, fmt.Sprintf("https://%s:%d", n.MemberHost(i, c.Namespace), workload.APIPort))
	}
	return out
}

// StepArgs are the arguments of "baokeeper executor" that run step p: its action,
// member, the cluster's members (StepMembers), the CA and token files of the
// executor's pod, and the step's own timeout, what the step's Job would have run.
func StepArgs(c *baov1.OpenBaoCluster, p PlannedStep) ([]string, error) {
	spec, ok := memberJobSpecs[p.Step]
	if !ok {
		return nil, fmt.Errorf("step %q is not a membership step", p.Step)
	}
	return memberArgs(spec, p.Member, StepMembers(c)), nil
}

// memberJobSpecs are the membership steps by LabelStep value.
var memberJobSpecs = map[string]memberJobSpec{
	StepStepDown:   {step: StepStepDown, action: ActionStepDown, timeout: StepDownTimeout, deadline: StepDownActiveDeadlineSeconds},
	StepPromote:    {step: StepPromote, action: ActionPromote, timeout: MembershipTimeout, deadline: MembershipActiveDeadlineSeconds},
	StepDemote:     {step: StepDemote, action: ActionDemote, timeout: MembershipTimeout, deadline: MembershipActiveDeadlineSeconds},
	StepRemovePeer: {step: StepRemovePeer, action: ActionRemovePeer, timeout: MembershipTimeout, deadline: MembershipActiveDeadlineSeconds},
}

// macOf is the hex HMAC-SHA256 under key of the fields, encoded as one JSON array
// (unambiguous: no field can run into the next).
func macOf(key []byte, fields ...any) string {
	b, err := json.Marshal(fields)
	if err != nil {
		// Strings, integers and formatted times only.
		panic(fmt.Sprintf("executorjob: cannot encode MAC fields: %v", err))
	}
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (r Request) mac(key []byte, name string) string {
	return macOf(key, "request", name, r.Operation, r.Step, r.Member, stamp(r.At), int64(r.Deadline))
}

func (r Result) mac(key []byte, name string) string {
	return macOf(key, "result", name, r.Operation, r.ExitCode, r.Output, r.Message, r.Executor, stamp(r.StartedAt), stamp(r.FinishedAt))
}

// Signed is req with its MAC under key, for the request named name.
func (r Request) Signed(key []byte, name string) Request {
	r.MAC = r.mac(key, name)
	return r
}

// Signed is res with its MAC under key, for the answer to the request named name.
func (r Result) Signed(key []byte, name string) Result {
	r.MAC = r.mac(key, name)
	return r
}

// verified reports whether mac is the MAC of the entry under key.
func verified(key []byte, mac, want string) bool {
	return len(key) > 0 && mac != "" && hmac.Equal([]byte(mac), []byte(want))
}

// Refusal is a mailbox entry that baokeeper did not write: it is never acted on.
type Refusal struct {
	// Key is the entry's key in the mailbox ConfigMap.
	Key string
	// Reason says why it is refused, in words a person can check.
	Reason string
}

// String is the refusal in one line.
func (r Refusal) String() string { return r.Key + ": " + r.Reason }

// validName reports why a request's or answer's name cannot be the name of a step
// ("" when it can): step names are Job names, DNS labels of at most 63 characters.
func validName(name string) string {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Sprintf("%q is not a step name (%s)", name, strings.Join(errs, "; "))
	}
	return ""
}

// Trusted splits the mailbox m of cluster c into what the operator and its executors
// wrote, and the entries nobody of baokeeper wrote (sorted by key). keys are the
// operations' mailbox keys by operation ID. A request is kept when it verifies under
// its operation's key; an answer when it verifies under its request's operation's key
// and names a pod of that operation's executor Job as its writer. Entries that did
// not decode (m.Foreign) are refused too.
func Trusted(c *baov1.OpenBaoCluster, m Mailbox, keys map[string][]byte) (Mailbox, []Refusal) {
	out := Mailbox{Requests: map[string]Request{}, Results: map[string]Result{}}
	refused := slices.Clone(m.Foreign)
	for name, req := range m.Requests {
		key := keys[req.Operation]
		switch {
		case len(key) == 0:
			refused = append(refused, Refusal{RequestKey(name), fmt.Sprintf("operation %q has no mailbox key: baokeeper did not start it", req.Operation)})
		case !verified(key, req.MAC, req.mac(key, name)):
			refused = append(refused, Refusal{RequestKey(name), fmt.Sprintf("its signature does not verify under the key of operation %s: baokeeper did not write it", req.Operation)})
		default:
			out.Requests[name] = req
		}
	}
	for name, res := range m.Results {
		req, asked := out.Requests[name]
		key := keys[req.Operation]
		switch {
		case !asked:
			refused = append(refused, Refusal{ResultKey(name), "it answers no request baokeeper made"})
		case res.Operation != req.Operation:
			refused = append(refused, Refusal{ResultKey(name), fmt.Sprintf("it answers for operation %q, and the request is of operation %s", res.Operation, req.Operation)})
		case !verified(key, res.MAC, res.mac(key, name)):
			refused = append(refused, Refusal{ResultKey(name), fmt.Sprintf("its signature does not verify under the key of operation %s: no executor of baokeeper wrote it", req.Operation)})
		case !strings.HasPrefix(res.Executor, ServeJobName(c, req.Operation)+"-"):
			refused = append(refused, Refusal{ResultKey(name), fmt.Sprintf("it names %q as its writer, not a pod of the executor Job %s", res.Executor, ServeJobName(c, req.Operation))})
		default:
			out.Results[name] = res
		}
	}
	slices.SortFunc(refused, func(a, b Refusal) int { return strings.Compare(a.Key, b.Key) })
	return out, refused
}

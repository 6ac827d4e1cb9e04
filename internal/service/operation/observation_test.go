package operation

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

// templateCluster has three members on revision podRev, each with the template
// annotations of the old template, and a StatefulSet on revision "new" whose
// template carries want.
func templateCluster(want map[string]string, current bool) *Cluster {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: want}}}}
	sts.Status.UpdateRevision, sts.Status.ObservedGeneration = "new", 1
	if current {
		sts.Status.ObservedGeneration = 2
	}
	c := &Cluster{StatefulSet: sts}
	old := map[string]string{baov1.TemplateAnnotationConfig: "c1", baov1.TemplateAnnotationCertificate: "t1"}
	for i, n := range []string{"bao-0", "bao-1", "bao-2"} {
		c.Members = append(c.Members, Member{Name: n, Ordinal: i, PodExists: true, Revision: "old", Template: old})
	}
	return c
}

func TestOffTemplateAndItsWords(t *testing.T) {
	cases := []struct {
		name, reason string
		want         map[string]string
		current      bool
		mutate       func(c *Cluster)
		wantOff      []string
		wantWords    string
	}{
		{name: "a pod of an earlier release", reason: "members reload their certificate in place: a certificate hash left on a pod by an earlier release names nothing",
			want:    map[string]string{baov1.TemplateAnnotationConfig: "c1"},
			current: true, wantOff: []string{"bao-0", "bao-1", "bao-2"},
			wantWords: "the pod template changed (resources, placement, image pull secrets or member annotations)"},
		{name: "configuration and restart", reason: "each changed annotation is named once, in a fixed order",
			want:    map[string]string{baov1.TemplateAnnotationConfig: "c2", baov1.TemplateAnnotationCertificate: "t1", baov1.TemplateAnnotationRestart: "now"},
			current: true, wantOff: []string{"bao-0", "bao-1", "bao-2"},
			wantWords: "the pod template changed: new configuration, restart requested (baokeeper.dev/restart=now)"},
		{name: "another field", reason: "resources and placement leave no annotation: said as such",
			want:    map[string]string{baov1.TemplateAnnotationConfig: "c1", baov1.TemplateAnnotationCertificate: "t1"},
			current: true, wantOff: []string{"bao-0", "bao-1", "bao-2"},
			wantWords: "the pod template changed (resources, placement, image pull secrets or member annotations)"},
		{name: "some members already on it", reason: "only the members off the template are listed",
			want: map[string]string{}, current: true,
			mutate:  func(c *Cluster) { c.Members[1].Revision = "new" },
			wantOff: []string{"bao-0", "bao-2"}},
		{name: "the StatefulSet controller has not seen the template", reason: "invariant 9: what the members run is not known yet",
			want: map[string]string{}, current: false},
		{name: "a member's pod is missing", reason: "a pod being re-created has no revision yet: nothing is planned on a partial view",
			want: map[string]string{}, current: true,
			mutate: func(c *Cluster) { c.Members[2].PodExists = false }},
		{name: "every member on the template", reason: "nothing to roll out",
			want: map[string]string{}, current: true,
			mutate: func(c *Cluster) {
				for i := range c.Members {
					c.Members[i].Revision = "new"
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := templateCluster(tc.want, tc.current)
			if tc.mutate != nil {
				tc.mutate(c)
			}
			g.Expect(c.OffTemplate()).To(Equal(tc.wantOff), tc.reason)
			if tc.wantWords != "" {
				g.Expect(c.TemplateChanges()).To(Equal(tc.wantWords), tc.reason)
			}
		})
	}
}

func TestOnTemplate(t *testing.T) {
	g := NewWithT(t)
	c := templateCluster(nil, true)
	g.Expect(c.OnTemplate(&c.Members[0])).To(BeFalse(), "old revision")
	c.Members[0].Revision = "new"
	g.Expect(c.OnTemplate(&c.Members[0])).To(BeTrue(), "new revision")
	c.StatefulSet.Status.ObservedGeneration = 1
	g.Expect(c.OnTemplate(&c.Members[0])).To(BeFalse(), "not proven while the StatefulSet controller has not seen the latest template")
	c.StatefulSet = nil
	g.Expect(c.OnTemplate(&c.Members[1])).To(BeTrue(), "no StatefulSet known: the image and version gate alone")
}

// A member left on an image that could not be pulled, by a cancelled upgrade, is
// re-created on the current template; nothing else is.
func TestStaleNeverStarted(t *testing.T) {
	const cur, broken = "openbao/openbao:2.4.0", "openbao/openbao:2.4.7"
	cases := []struct {
		name, reason string
		mutate       func(c *Cluster)
		want         []string
	}{
		{name: "left on the broken image", reason: "the template went back; the pod never started: re-create it",
			mutate: func(c *Cluster) { c.Members[2].Image, c.Members[2].NeverStarted = broken, true }, want: []string{"bao-2"}},
		{name: "never started on the current template", reason: "an upgrade in progress owns it: its step waits and times out with the pod's reason",
			mutate: func(c *Cluster) { c.Members[2].NeverStarted = true }},
		{name: "ran the broken image", reason: "a member that ran (a crash loop) may have opened its data: not touched",
			mutate: func(c *Cluster) { c.Members[2].Image = broken }},
		{name: "already being deleted", reason: "nothing to do twice",
			mutate: func(c *Cluster) {
				c.Members[2].Image, c.Members[2].NeverStarted, c.Members[2].PodTerminating = broken, true, true
			}},
		{name: "template not seen yet", reason: "invariant 9: nothing is deleted before the StatefulSet controller saw the template",
			mutate: func(c *Cluster) {
				c.Members[2].Image, c.Members[2].NeverStarted = broken, true
				c.StatefulSet.Status.ObservedGeneration = 1
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := templateCluster(map[string]string{}, true)
			for i := range c.Members {
				c.Members[i].Image, c.Members[i].Revision = cur, "new"
			}
			tc.mutate(c)
			var got []string
			for _, m := range c.StaleNeverStarted(cur) {
				got = append(got, m.Name)
			}
			NewWithT(t).Expect(got).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestClockOffset(t *testing.T) {
	asked := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, reason string
		server       time.Time
		took         time.Duration
		want         time.Duration
	}{
		{name: "in sync", reason: "a clock within the truncation to seconds is not off", server: asked, took: 40 * time.Millisecond},
		{name: "a few seconds", reason: "within the tolerance nothing is said", server: asked.Add(20 * time.Second), took: time.Second},
		{name: "10 minutes behind", reason: "the member's whole seconds, half a second added, against the request's midpoint",
			server: asked.Add(-10 * time.Minute), took: 40 * time.Millisecond, want: -10 * time.Minute},
		{name: "3 minutes ahead, slow answer", reason: "the member answered 2 s in, at 3 minutes ahead: the estimate is within the second its truncation loses",
			server: asked.Add(3*time.Minute + 2*time.Second), took: 4 * time.Second, want: 3*time.Minute + time.Second},
		{name: "unknown", reason: "no server_time_utc says nothing", took: 40 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(ClockOffset(tc.server, asked, asked.Add(tc.took))).To(Equal(tc.want), tc.reason)
		})
	}
}

func TestAutopilotLags(t *testing.T) {
	cases := []struct {
		name           string
		known, healthy bool
		leader         string
		want           bool
	}{
		{"after an election: autopilot read, a leader, not yet healthy", true, false, "bao-1", true},
		{"healthy: nothing more to read", true, true, "bao-1", false},
		{"autopilot not read or not trusted", false, false, "bao-1", false},
		{"no leader named: no leader to compare with", true, false, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{AutopilotKnown: tc.known, AutopilotHealthy: tc.healthy, Leader: tc.leader}
			if got := c.AutopilotLags(); got != tc.want {
				t.Errorf("AutopilotLags() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReplicationOf(t *testing.T) {
	cases := []struct {
		name  string
		count uint64
		err   error
		want  Replication
	}{
		{name: "AppendEntries handled: the leader reached it", count: 3, want: ReplicationSeen},
		{name: "none handled since it started", count: 0, want: ReplicationNone},
		{name: "no answer: not known", err: errors.New("connection refused"), want: ReplicationUnknown},
		{name: "no answer wins over a count", count: 3, err: errors.New("timeout"), want: ReplicationUnknown},
	}
	for _, tc := range cases {
		NewWithT(t).Expect(ReplicationOf(tc.count, tc.err)).To(Equal(tc.want), tc.name)
	}
}

func TestLeaderReachesAndWhoIsRead(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 50, 0, 0, time.UTC)
	up := Member{Name: "bao-1", PodExists: true, PodReady: true, Initialized: true, Version: "2.4.1"}
	cases := []struct {
		name     string
		member   func(m *Member)
		wantRead bool
		reaches  bool
	}{
		{name: "the leader: never read, always reached", member: func(m *Member) { m.Name, m.ReadySince = "bao-0", now.Add(-time.Second) }, reaches: true},
		{name: "Ready a second ago, replication seen", member: func(m *Member) { m.ReadySince, m.Replication = now.Add(-time.Second), ReplicationSeen },
			wantRead: true, reaches: true},
		{name: "Ready a second ago, none yet", member: func(m *Member) { m.ReadySince, m.Replication = now.Add(-time.Second), ReplicationNone },
			wantRead: true},
		{name: "Ready a second ago, metrics unknown", member: func(m *Member) { m.ReadySince, m.Replication = now.Add(-time.Second), ReplicationUnknown },
			wantRead: true},
		{name: "Ready an hour ago, not read: autopilot heard it since", member: func(m *Member) { m.ReadySince, m.LastContact = now.Add(-time.Hour), time.Second },
			reaches: true},
		{name: "Ready a second ago, not read, autopilot's contact older", member: func(m *Member) { m.ReadySince, m.LastContact = now.Add(-time.Second), 4*time.Second },
			wantRead: true},
		{name: "sealed: not read", member: func(m *Member) { m.ReadySince, m.Sealed, m.LastContact = now.Add(-time.Second), true, 0 }, reaches: true},
	}
	for _, tc := range cases {
		g := NewWithT(t)
		m := up
		tc.member(&m)
		c := &Cluster{Now: now, Leader: "bao-0"}
		g.Expect(c.NeedsReplicationRead(&m)).To(Equal(tc.wantRead), tc.name)
		g.Expect(c.LeaderReaches(&m)).To(Equal(tc.reaches), tc.name)
	}
}

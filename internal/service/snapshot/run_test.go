package snapshot

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/operation"
)

func runCluster(mut ...func(*baov1.OpenBaoCluster)) *baov1.OpenBaoCluster {
	c := &baov1.OpenBaoCluster{ObjectMeta: metav1.ObjectMeta{Name: "bao", Namespace: "ns", UID: "u1"}}
	c.Spec.Upgrade.PreUpgradeSnapshot = spec(baov1.SnapshotAlways)
	c.Status.CurrentVersion = "2.4.0"
	for _, m := range mut {
		m(c)
	}
	return c
}

func scheduled(expr, tz string) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.Schedule, c.Spec.Snapshots.TimeZone = expr, tz }
}

func withRun(run *baov1.SnapshotRun) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) {
		if c.Status.Snapshots == nil {
			c.Status.Snapshots = &baov1.SnapshotsStatus{}
		}
		c.Status.Snapshots.Current = run
		c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationSnapshot, Holder: operation.HolderUpgradeManager}
	}
}

func withRetention(count int32) func(*baov1.OpenBaoCluster) {
	return func(c *baov1.OpenBaoCluster) { c.Spec.Snapshots.Retention = &baov1.SnapshotRetention{Count: &count} }
}

func TestTend(t *testing.T) {
	t10 := time.Date(2026, 12, 6, 10, 30, 0, 0, time.UTC)
	at := func(h, m int) *metav1.Time {
		t := metav1.NewTime(time.Date(2026, 12, 6, h, m, 0, 0, time.UTC))
		return &t
	}
	tests := []struct {
		reason   string
		c        *baov1.OpenBaoCluster
		now      time.Time
		wantNext *metav1.Time
		wantDue  *metav1.Time
		wantWait string
	}{
		{reason: "a new schedule starts from now: no snapshot at once",
			c: runCluster(scheduled("0 */6 * * *", "")), now: t10, wantNext: at(12, 0)},
		{reason: "its time came: due, and the next time after now",
			c: runCluster(scheduled("0 */6 * * *", ""), func(c *baov1.OpenBaoCluster) {
				c.Status.Snapshots = &baov1.SnapshotsStatus{Schedule: "0 */6 * * * (UTC)", NextScheduledAt: at(6, 0)}
			}), now: t10, wantNext: at(12, 0), wantDue: at(6, 0), wantWait: "starts now"},
		{reason: "times missed while one is due: still one due, the first",
			c: runCluster(scheduled("0 * * * *", ""), func(c *baov1.OpenBaoCluster) {
				c.Status.Snapshots = &baov1.SnapshotsStatus{Schedule: "0 * * * * (UTC)", NextScheduledAt: at(9, 0), Due: at(8, 0)}
			}), now: t10, wantNext: at(11, 0), wantDue: at(8, 0), wantWait: "due at 2026-12-06T08:00:00Z starts now"},
		{reason: "a due snapshot waits for the operation that holds the lock, and says so",
			c: runCluster(scheduled("0 * * * *", ""), func(c *baov1.OpenBaoCluster) {
				c.Status.Snapshots = &baov1.SnapshotsStatus{Schedule: "0 * * * * (UTC)", NextScheduledAt: at(11, 0), Due: at(10, 0)}
				c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationRollingUpgrade, Message: "rolling upgrade from 2.4.0 to 2.4.1"}
			}), now: t10, wantNext: at(11, 0), wantDue: at(10, 0),
			wantWait: "the scheduled snapshot due at 2026-12-06T10:00:00Z waits for operation RollingUpgrade (rolling upgrade from 2.4.0 to 2.4.1) to release the cluster"},
		{reason: "a changed schedule computes the next time again and keeps what is due",
			c: runCluster(scheduled("30 11 * * *", "Europe/Berlin"), func(c *baov1.OpenBaoCluster) {
				c.Status.Snapshots = &baov1.SnapshotsStatus{Schedule: "0 * * * * (UTC)", NextScheduledAt: at(11, 0), Due: at(10, 0)}
			}), now: t10, wantDue: at(10, 0), wantWait: "starts now",
			// 11:30 in Berlin is 10:30 UTC: at exactly that time, the next is tomorrow's.
			wantNext: &metav1.Time{Time: time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)}},
		{reason: "a removed schedule drops its next and due times",
			c: runCluster(func(c *baov1.OpenBaoCluster) {
				c.Status.Snapshots = &baov1.SnapshotsStatus{Schedule: "0 * * * * (UTC)", NextScheduledAt: at(11, 0), Due: at(10, 0)}
			}), now: t10},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			Tend(tc.c, tc.now)
			ss := tc.c.Status.Snapshots
			g.Expect(ss).NotTo(BeNil())
			if tc.wantNext == nil {
				g.Expect(ss.NextScheduledAt).To(BeNil())
			} else {
				g.Expect(ss.NextScheduledAt.Time).To(BeTemporally("==", tc.wantNext.Time))
			}
			if tc.wantDue == nil {
				g.Expect(ss.Due).To(BeNil())
			} else {
				g.Expect(ss.Due.Time).To(BeTemporally("==", tc.wantDue.Time))
			}
			if tc.wantWait == "" {
				g.Expect(ss.WaitingFor).To(BeEmpty())
			} else {
				g.Expect(ss.WaitingFor).To(ContainSubstring(tc.wantWait))
			}
		})
	}
	t.Run("no schedule and no status: nothing is written", func(t *testing.T) {
		c := runCluster()
		Tend(c, t10)
		NewWithT(t).Expect(c.Status.Snapshots).To(BeNil())
	})
}

func decideRun(c *baov1.OpenBaoCluster, jobs map[string]operation.ObservedJob) operation.Plan {
	if jobs == nil {
		jobs = map[string]operation.ObservedJob{}
	}
	return RunOperation{}.Decide(&operation.Snapshot{Cluster: &operation.Cluster{Now: now}, Object: c, Jobs: jobs, ExecutorImage: "baokeeper:test"})
}

func TestRunOperation(t *testing.T) {
	started := ago(time.Minute)
	take := func(attempts int32) *baov1.SnapshotRun {
		return &baov1.SnapshotRun{ID: "abcd1234", Trigger: baov1.SnapshotRequested, Request: "r1", StartedAt: started, Step: baov1.SnapshotRunTake, Attempts: attempts}
	}
	key := "bao/ns/bao/requested-2.4.0-20261129T115900Z-1.snap"
	receipt := func(loc string) string {
		b, _ := json.Marshal(Receipt{Location: loc, SizeBytes: 4096, SHA256: goodReceipt().SHA256, RaftIndex: 90, FromMember: "bao-0", TakenAt: now.Add(-2 * time.Second)})
		return string(b)
	}
	job := func(phase operation.JobPhase, finished time.Time, term string) map[string]operation.ObservedJob {
		return map[string]operation.ObservedJob{"bao-snapshot-abcd1234-1": {Job: operation.Job{Phase: phase, FinishedAt: finished, Message: "BackoffLimitExceeded"}, Operation: "abcd1234", Termination: term}}
	}

	t.Run("a request takes the lock and persists the run before any Job", func(t *testing.T) {
		g := NewWithT(t)
		c := runCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "r1", Due: ago(time.Hour)}
		})
		p := decideRun(c, nil)
		g.Expect(p.Kind).To(Equal(operation.KindPersist))
		g.Expect(p.Job).To(BeNil())
		g.Expect(p.Status.OperationLock.Operation).To(Equal(operation.OperationSnapshot))
		run := p.Status.Snapshots.Current
		g.Expect(run.Trigger).To(Equal(baov1.SnapshotRequested))
		g.Expect(run.Request).To(Equal("r1"))
		g.Expect(run.ScheduledFor).NotTo(BeNil(), "one snapshot serves the due schedule too")
		g.Expect(p.Status.Snapshots.Requested).To(BeEmpty())
		g.Expect(p.Status.Snapshots.Due).To(BeNil())
		g.Expect(c.Status.Snapshots.Requested).To(Equal("r1"), "the observed status is not changed")
	})
	t.Run("the lock held by another operation: nothing starts", func(t *testing.T) {
		g := NewWithT(t)
		c := runCluster(func(c *baov1.OpenBaoCluster) {
			c.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "r1"}
			c.Status.OperationLock = &baov1.OperationLock{Operation: operation.OperationScaling, Message: "scaling from 3 to 5"}
		})
		p := decideRun(c, nil)
		g.Expect(p.Kind).To(Equal(operation.KindWait))
		g.Expect(p.Status.Snapshots.Current).To(BeNil())
		g.Expect(p.Status.Snapshots.WaitingFor).To(ContainSubstring("waits for operation Scaling (scaling from 3 to 5)"))
	})
	t.Run("the first attempt's Job, named after the run", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(0))), nil)
		g.Expect(p.Kind).To(Equal(operation.KindCreateJob))
		g.Expect(p.Job.Name).To(Equal("bao-snapshot-abcd1234-1"))
		g.Expect(p.Job.Spec.Template.Spec.Containers[0].Args).To(ContainElement(key))
		g.Expect(p.Status.Snapshots.Current.Attempts).To(Equal(int32(1)))
	})
	t.Run("a Job not seen yet is created again under the same name, not a new attempt", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(1))), nil)
		g.Expect(p.Kind).To(Equal(operation.KindCreateJob))
		g.Expect(p.Job.Name).To(Equal("bao-snapshot-abcd1234-1"))
		g.Expect(p.Status.Snapshots.Current.Attempts).To(Equal(int32(1)))
	})
	t.Run("a running Job is waited for", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(1))), job(operation.JobRunning, time.Time{}, ""))
		g.Expect(p.Kind).To(Equal(operation.KindWait))
	})
	t.Run("a verified snapshot without retention: recorded, lock released", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(1))), job(operation.JobSucceeded, now, receipt("s3://snaps/"+key)))
		g.Expect(p.Kind).To(Equal(operation.KindPersist))
		g.Expect(p.Status.OperationLock).To(BeNil())
		g.Expect(p.Status.Snapshots.Current).To(BeNil())
		g.Expect(p.Status.Snapshots.Taken).To(HaveLen(1))
		g.Expect(p.Status.Snapshots.Taken[0].Trigger).To(Equal(baov1.SnapshotRequested))
		g.Expect(p.Status.Snapshots.Taken[0].Request).To(Equal("r1"))
		g.Expect(p.Status.LastSnapshot).To(BeNil(), "status.lastSnapshot stays the last upgrade's way back")
		g.Expect(Newest(p.Status).Location).To(Equal("s3://snaps/"+key), "IfOlderThan may reuse it: it is the newest")
		g.Expect(p.Events).To(ContainElement(HaveField("Reason", EventTaken)))
	})
	t.Run("a verified snapshot with retention: the prune step next, lock kept", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(1)), withRetention(3)), job(operation.JobSucceeded, now, receipt("s3://snaps/"+key)))
		g.Expect(p.Status.OperationLock).NotTo(BeNil())
		g.Expect(p.Status.Snapshots.Current.Step).To(Equal(baov1.SnapshotRunPrune))
		g.Expect(p.Status.Snapshots.Current.Attempts).To(BeZero())
		g.Expect(p.Status.Snapshots.Current.Receipt.Location).To(Equal("s3://snaps/" + key))
		// The next pass creates the prune Job, protecting the new snapshot.
		c := runCluster(withRetention(3))
		c.Status = *p.Status
		p2 := decideRun(c, nil)
		g.Expect(p2.Kind).To(Equal(operation.KindCreateJob))
		g.Expect(p2.Job.Name).To(Equal("bao-prune-abcd1234"))
		args := p2.Job.Spec.Template.Spec.Containers[0].Args
		g.Expect(args[:2]).To(Equal([]string{"executor", "prune"}))
		g.Expect(args).To(ContainElements("--s3-folder", "bao/ns/bao/", "--keep-count", "3", "--protect", key))
	})
	t.Run("a receipt for another object is not taken", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(1))), job(operation.JobSucceeded, now.Add(-time.Minute), receipt("s3://snaps/elsewhere.snap")))
		g.Expect(p.Kind).To(Equal(operation.KindCreateJob), "the next attempt")
		g.Expect(p.Status.Snapshots.Taken).To(BeEmpty())
	})
	t.Run("a failed Job is retried after the delay", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(take(1))), job(operation.JobFailed, now.Add(-2*time.Second), "connection refused"))
		g.Expect(p.Kind).To(Equal(operation.KindWait))
		g.Expect(p.RequeueAfter).To(Equal(8 * time.Second))
		g.Expect(p.WaitingFor).To(ContainSubstring("connection refused"))
	})
	t.Run("the last attempt failed: the failure is recorded and the lock released", func(t *testing.T) {
		g := NewWithT(t)
		run := take(RunAttempts)
		name := fmt.Sprintf("bao-snapshot-abcd1234-%d", RunAttempts)
		p := decideRun(runCluster(withRun(run)), map[string]operation.ObservedJob{name: {Job: operation.Job{Phase: operation.JobFailed, FinishedAt: now.Add(-time.Minute)}, Operation: "abcd1234", Termination: "AccessDenied"}})
		g.Expect(p.Status.OperationLock).To(BeNil())
		g.Expect(p.Status.Snapshots.Current).To(BeNil())
		g.Expect(p.Status.Snapshots.LastFailure.Message).To(ContainSubstring("failed after 3 attempts"))
		g.Expect(p.Status.Snapshots.LastFailure.Message).To(ContainSubstring("AccessDenied"))
		g.Expect(p.Events).To(ContainElement(HaveField("Reason", EventRunFailed)))
	})
	prune := &baov1.SnapshotRun{ID: "abcd1234", Trigger: baov1.SnapshotScheduled, StartedAt: started, Step: baov1.SnapshotRunPrune, Attempts: 1}
	pruneJob := func(phase operation.JobPhase, term string) map[string]operation.ObservedJob {
		return map[string]operation.ObservedJob{"bao-prune-abcd1234": {Job: operation.Job{Phase: phase, FinishedAt: now, Message: "DeadlineExceeded"}, Operation: "abcd1234", Termination: term}}
	}
	t.Run("a pruning that deleted objects is recorded and ends the run", func(t *testing.T) {
		g := NewWithT(t)
		res, _ := json.Marshal(PruneResult{Listed: 5, Deleted: []string{"a.snap", "b.snap"}, Kept: 3})
		p := decideRun(runCluster(withRun(prune), withRetention(3)), pruneJob(operation.JobSucceeded, string(res)))
		g.Expect(p.Status.OperationLock).To(BeNil())
		g.Expect(*p.Status.Snapshots.LastPrune).To(HaveField("Deleted", int32(2)))
		g.Expect(p.Status.Snapshots.LastPrune.Listed).To(Equal(int32(5)))
		g.Expect(p.Events).To(ContainElement(HaveField("Reason", EventPruned)))
	})
	t.Run("a deletion the bucket refused is reported; the snapshot stays taken", func(t *testing.T) {
		g := NewWithT(t)
		res, _ := json.Marshal(PruneResult{Listed: 5, Deleted: []string{"a.snap"}, Kept: 4, Failed: "deleting b.snap: AccessDenied; nothing after it was deleted"})
		p := decideRun(runCluster(withRun(prune), withRetention(3)), pruneJob(operation.JobSucceeded, string(res)))
		g.Expect(p.Status.Snapshots.LastPrune.Failed).To(ContainSubstring("AccessDenied"))
		g.Expect(p.Events).To(ContainElement(HaveField("Reason", EventPruneFailed)))
		g.Expect(p.Status.Snapshots.LastFailure).To(BeNil())
	})
	t.Run("a failed prune Job is reported, not retried", func(t *testing.T) {
		g := NewWithT(t)
		p := decideRun(runCluster(withRun(prune), withRetention(3)), pruneJob(operation.JobFailed, "listing: NoSuchBucket"))
		g.Expect(p.Status.Snapshots.Current).To(BeNil())
		g.Expect(p.Status.Snapshots.LastPrune.Failed).To(ContainSubstring("NoSuchBucket"))
	})
	t.Run("the bucket removed while the run ran: it ends, failed, and the lock is released", func(t *testing.T) {
		g := NewWithT(t)
		c := runCluster(withRun(take(1)), func(c *baov1.OpenBaoCluster) { c.Spec.Upgrade.PreUpgradeSnapshot.S3 = nil })
		p := decideRun(c, job(operation.JobRunning, time.Time{}, ""))
		g.Expect(p.Status.Snapshots.Current).To(BeNil())
		g.Expect(p.Status.OperationLock).To(BeNil())
		g.Expect(p.Status.Snapshots.LastFailure.Request).To(Equal("r1"), "kubectl bao snapshot --wait reads its failure")
		g.Expect(p.Status.Snapshots.LastFailure.Message).To(ContainSubstring("were removed while it ran"))
	})
	t.Run("the bucket removed before the run started: the request fails and says what to set", func(t *testing.T) {
		g := NewWithT(t)
		c := runCluster(func(c *baov1.OpenBaoCluster) {
			c.Spec.Upgrade.PreUpgradeSnapshot.S3 = nil
			c.Status.Snapshots = &baov1.SnapshotsStatus{Requested: "r1"}
		})
		p := decideRun(c, nil)
		g.Expect(p.Status.Snapshots.Requested).To(BeEmpty())
		g.Expect(p.Status.Snapshots.LastFailure.Message).To(ContainSubstring("neither spec.snapshots.s3 nor spec.upgrade.preUpgradeSnapshot.s3 is set"))
		g.Expect(p.Status.OperationLock).To(BeNil())
	})
}

func TestNewestAndReuse(t *testing.T) {
	g := NewWithT(t)
	st := &baov1.OpenBaoClusterStatus{LastSnapshot: &baov1.SnapshotReceipt{Location: "s3://b/pre", TakenAt: ago(3 * time.Hour)}}
	g.Expect(Newest(st).Location).To(Equal("s3://b/pre"))
	st.Snapshots = &baov1.SnapshotsStatus{Taken: []baov1.SnapshotReceipt{{Location: "s3://b/sched", TakenAt: ago(10 * time.Minute)}}}
	g.Expect(Newest(st).Location).To(Equal("s3://b/sched"), "a scheduled snapshot taken since is newer")

	// IfOlderThan reuses it, and it becomes the upgrade's way back.
	c := runCluster(func(c *baov1.OpenBaoCluster) {
		c.Spec.Upgrade.PreUpgradeSnapshot = spec(baov1.SnapshotIfOlderThan)
		c.Status = *st
		c.Status.Snapshots.Taken[0].Location = "s3://snaps/bao/ns/bao/scheduled-2.4.0-x-1.snap"
		c.Status.Upgrade = &baov1.UpgradeStatus{FromVersion: "2.4.0", TargetVersion: "2.4.1", StartedAt: ago(time.Minute)}
	})
	p := Operation{}.Decide(&operation.Snapshot{Cluster: &operation.Cluster{Now: now}, Object: c, Jobs: map[string]operation.ObservedJob{}})
	g.Expect(p.Status.Upgrade.Snapshot.Location).To(Equal("s3://snaps/bao/ns/bao/scheduled-2.4.0-x-1.snap"))
	g.Expect(p.Status.LastSnapshot).To(Equal(p.Status.Upgrade.Snapshot), "the reused snapshot is the last upgrade's")
}

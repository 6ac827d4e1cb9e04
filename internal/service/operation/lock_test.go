package operation

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
)

func TestLock(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st := &baov1.OpenBaoClusterStatus{}

	g.Expect(HeldByOther(st, OperationRollingUpgrade)).To(BeNil(), "a free lock is held by nobody")
	g.Expect(Acquire(st, OperationRollingUpgrade, HolderUpgradeManager, "2.4.0 to 2.4.1", now)).To(Succeed())
	g.Expect(st.OperationLock).To(HaveField("Operation", OperationRollingUpgrade))
	g.Expect(st.OperationLock.AcquiredAt.Time).To(Equal(now))

	later := now.Add(time.Minute)
	g.Expect(Acquire(st, OperationRollingUpgrade, HolderUpgradeManager, "2.4.0 to 2.4.1, bao-2", later)).To(Succeed(), "re-entrant for the same operation")
	g.Expect(st.OperationLock.AcquiredAt.Time).To(Equal(now), "the lock keeps its first acquisition time")
	g.Expect(st.OperationLock.Message).To(Equal("2.4.0 to 2.4.1, bao-2"))

	err := Acquire(st, "Restore", "baokeeper/restore", "restore", later)
	g.Expect(err).To(MatchError(ContainSubstring("operation RollingUpgrade (baokeeper/openbaocluster-upgrade) holds the cluster since 2026-11-29T12:00:00Z")))
	g.Expect(st.OperationLock.Operation).To(Equal(OperationRollingUpgrade), "a refused acquisition changes nothing")
	g.Expect(HeldByOther(st, "Restore")).To(HaveField("Operation", OperationRollingUpgrade))

	Release(st, "Restore")
	g.Expect(st.OperationLock).NotTo(BeNil(), "only the holder releases")
	Release(st, OperationRollingUpgrade)
	g.Expect(st.OperationLock).To(BeNil())
}

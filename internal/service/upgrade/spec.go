package upgrade

import (
	"fmt"

	baov1 "github.com/baokeeper/baokeeper/api/v1alpha1"
	"github.com/baokeeper/baokeeper/internal/service/workload"
)

// SpecRefusal says why baokeeper refuses a spec that the API server accepted, or
// that it stored before the API server validated it.
type SpecRefusal struct {
	// Reason is the SpecValid condition's reason.
	Reason baov1.Reason
	// Message names the field and says what to change.
	Message string
}

// CheckSpec applies the checks that come before the version and image policy, in
// order; the first refusal wins. It is pure.
//
//  1. Every duration field parses, with a unit, and is positive where 0 makes no
//     sense: an object stored before the CRD validated durations reaches the
//     operator with such a value, and only that cluster must stop.
//  2. A custom seal stanza holds seal blocks only (workload.SealStanzaProblem):
//     it is pasted into config.hcl, where anything else would reconfigure the
//     server (a listener without TLS).
func CheckSpec(c *baov1.OpenBaoCluster) *SpecRefusal {
	if err := c.ValidateDurations(); err != nil {
		return &SpecRefusal{Reason: baov1.ReasonInvalidDuration,
			Message: fmt.Sprintf("%v; nothing was changed for this cluster until the field is fixed", err)}
	}
	if c.GetSealType() == baov1.CustomSeal {
		if problem := workload.SealStanzaProblem(c.Spec.Seal.CustomStanza); problem != "" {
			return &SpecRefusal{Reason: baov1.ReasonInvalidSealStanza,
				Message: problem + "; nothing was changed for this cluster until the field is fixed"}
		}
	}
	return nil
}

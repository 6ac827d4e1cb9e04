package openbao

import "testing"

func TestJustAfterElection(t *testing.T) {
	srv := func(status string, idx uint64) AutopilotServer {
		return AutopilotServer{NodeStatus: status, LastIndex: idx}
	}
	cases := []struct {
		name, reason string
		st           AutopilotState
		want         bool
	}{
		{"settled", "every server answers", AutopilotState{Leader: "a", Servers: map[string]AutopilotServer{"a": srv("alive", 9), "b": srv("alive", 9), "c": srv("alive", 9)}}, false},
		{"right after an election", "every other server left with index 0: not trusted", AutopilotState{Leader: "a", Servers: map[string]AutopilotServer{"a": srv("alive", 9), "b": srv("left", 0), "c": srv("left", 0)}}, true},
		{"one dead voter", "bug: a dead voter left with index 0 made every read untrustworthy, so it was never removed", AutopilotState{Leader: "a", Servers: map[string]AutopilotServer{"a": srv("alive", 9), "b": srv("alive", 9), "c": srv("left", 0)}}, false},
		{"single server", "nothing to doubt", AutopilotState{Leader: "a", Servers: map[string]AutopilotServer{"a": srv("alive", 9)}}, false},
	}
	for _, tc := range cases {
		if got := JustAfterElection(&tc.st); got != tc.want {
			t.Errorf("%s: got %t, want %t (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
}

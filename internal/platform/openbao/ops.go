package openbao

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	baoapi "github.com/openbao/openbao/api/v2"
)

// Health implements MemberReader and Reader.
//
// It uses the api client's typed sys/health call, which overrides the
// standby, sealed and uninitialized status codes (429, 503, 501) with a 2xx
// code, so every state arrives as a parsed body rather than as an error.
func (c *client) Health(ctx context.Context, addr string) (*Health, error) {
	ctx, served := withCertSink(ctx)
	h, err := read(ctx, c, fmt.Sprintf("failed to read health from %s", addr), addr, pathHealth, false,
		func(ctx context.Context, cl *baoapi.Client) (*Health, error) {
			asked := c.now()
			resp, err := cl.Sys().HealthWithContext(ctx)
			if err != nil {
				return nil, err
			}
			var server time.Time
			if resp.ServerTimeUTC > 0 {
				server = time.Unix(resp.ServerTimeUTC, 0).UTC()
			}
			return &Health{
				ServerTime:  server,
				AskedAt:     asked,
				AnsweredAt:  c.now(),
				Initialized: resp.Initialized,
				Sealed:      resp.Sealed,
				Standby:     resp.Standby,
				Version:     resp.Version,
				ClusterID:   resp.ClusterID,
				ClusterName: resp.ClusterName,
			}, nil
		})
	if err != nil {
		return nil, err
	}
	h.Certificate = served.get()
	return h, nil
}

// Leader implements MemberReader.
func (c *client) Leader(ctx context.Context, addr string) (*Leader, error) {
	return read(ctx, c, fmt.Sprintf("failed to read the leader from %s", addr), addr, pathLeader, false,
		func(ctx context.Context, cl *baoapi.Client) (*Leader, error) {
			resp, err := cl.Sys().LeaderWithContext(ctx)
			if err != nil {
				return nil, err
			}
			return &Leader{
				IsSelf:               resp.IsSelf,
				LeaderAddress:        resp.LeaderAddress,
				LeaderClusterAddress: resp.LeaderClusterAddress,
				RaftCommittedIndex:   resp.RaftCommittedIndex,
				RaftAppliedIndex:     resp.RaftAppliedIndex,
			}, nil
		})
}

// read runs get against addr within the per-call timeout, with the client
// token when authed, and returns what it read.
func read[T any](ctx context.Context, c *client, action, addr, path string, authed bool,
	get func(context.Context, *baoapi.Client) (*T, error),
) (*T, error) {
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()

	var out *T
	call := func(cl *baoapi.Client) error {
		var err error
		out, err = get(ctx, cl)
		return err
	}
	var err error
	if authed {
		err = c.withToken(ctx, action, addr, path, "read", call)
	} else {
		err = c.withoutToken(action, addr, path, call)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StepDown implements Leadership.
func (c *client) StepDown(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to step down %s", addr)
	return c.withToken(ctx, action, addr, pathStepDown, "update and sudo", func(cl *baoapi.Client) error {
		return cl.Sys().StepDownWithContext(ctx)
	})
}

// AutopilotState implements Leadership.
func (c *client) AutopilotState(ctx context.Context, addr string) (*AutopilotState, error) {
	return read(ctx, c, fmt.Sprintf("failed to read autopilot state from %s", addr), addr, pathAutopilotState, true,
		func(ctx context.Context, cl *baoapi.Client) (*AutopilotState, error) {
			state, err := cl.Sys().RaftAutopilotStateWithContext(ctx)
			if err != nil {
				return nil, err
			}
			if state == nil { // the api client turns 404 into (nil, nil)
				return nil, ErrNotFound
			}
			return mapAutopilotState(state)
		})
}

// raftConfigurationData is the data of a sys/storage/raft/configuration
// answer.
type raftConfigurationData struct {
	Config *struct {
		Servers []struct {
			NodeID  string `json:"node_id"`
			Address string `json:"address"`
			Leader  bool   `json:"leader"`
			Voter   bool   `json:"voter"`
		} `json:"servers"`
	} `json:"config"`
}

// RaftConfiguration implements Membership.
func (c *client) RaftConfiguration(ctx context.Context, addr string) (*RaftConfiguration, error) {
	action := fmt.Sprintf("failed to read the Raft configuration from %s", addr)
	return read(ctx, c, action, addr, pathRaftConfiguration, true, func(ctx context.Context, cl *baoapi.Client) (*RaftConfiguration, error) {
		secret, err := cl.Logical().ReadWithContext(ctx, pathRaftConfiguration)
		if err != nil {
			return nil, err
		}
		if secret == nil || secret.Data == nil { // the api client turns 404 into (nil, nil)
			return nil, ErrNotFound
		}
		// Data holds generic JSON; a round trip decodes it into typed fields.
		raw, err := json.Marshal(secret.Data)
		if err != nil {
			return nil, fmt.Errorf("failed to re-encode the answer: %w", err)
		}
		var data raftConfigurationData
		if err := json.Unmarshal(raw, &data); err != nil {
			return nil, fmt.Errorf("failed to decode the answer: %w", err)
		}
		if data.Config == nil {
			return nil, errors.New("the answer has no config")
		}
		out := &RaftConfiguration{Servers: make([]RaftServer, 0, len(data.Config.Servers))}
		for _, s := range data.Config.Servers {
			out.Servers = append(out.Servers, RaftServer{NodeID: s.NodeID, Address: s.Address, Leader: s.Leader, Voter: s.Voter})
		}
		return out, nil
	})
}

// Promote implements Membership.
func (c *client) Promote(ctx context.Context, addr, nodeID string) error {
	return c.writeServerID(ctx, "promote", addr, pathRaftPromote, nodeID)
}

// Demote implements Membership.
func (c *client) Demote(ctx context.Context, addr, nodeID string) error {
	return c.writeServerID(ctx, "demote", addr, pathRaftDemote, nodeID)
}

// RemovePeer implements Membership.
func (c *client) RemovePeer(ctx context.Context, addr, nodeID string) error {
	return c.writeServerID(ctx, "remove", addr, pathRaftRemovePeer, nodeID)
}

// writeServerID sends {"server_id": nodeID} to path on addr.
func (c *client) writeServerID(ctx context.Context, verb, addr, path, nodeID string) error {
	ctx, cancel := context.WithTimeout(ctx, c.s.timeout)
	defer cancel()

	action := fmt.Sprintf("failed to %s Raft peer %q through %s", verb, nodeID, addr)
	if nodeID == "" {
		return fmt.Errorf("%s: invalid node ID: it is empty", action)
	}
	return c.withToken(ctx, action, addr, path, "update", func(cl *baoapi.Client) error {
		_, err := cl.Logical().WriteWithContext(ctx, path, map[string]any{"server_id": nodeID})
		return err
	})
}

func mapAutopilotState(in *baoapi.AutopilotState) (*AutopilotState, error) {
	out := &AutopilotState{
		Healthy:          in.Healthy,
		FailureTolerance: in.FailureTolerance,
		Leader:           in.Leader,
		Voters:           append([]string(nil), in.Voters...),
		NonVoters:        append([]string(nil), in.NonVoters...),
		Servers:          make(map[string]AutopilotServer, len(in.Servers)),
	}
	for key, s := range in.Servers {
		if s == nil {
			continue
		}
		var lastContact time.Duration
		if s.LastContact != "" {
			d, err := time.ParseDuration(s.LastContact)
			if err != nil {
				return nil, fmt.Errorf("server %s has an unreadable last_contact %q: %w", key, s.LastContact, err)
			}
			lastContact = d
		}
		var stableSince time.Time
		if s.StableSince != "" {
			t, err := time.Parse(time.RFC3339Nano, s.StableSince)
			if err != nil {
				return nil, fmt.Errorf("server %s has an unreadable stable_since %q: %w", key, s.StableSince, err)
			}
			stableSince = t
		}
		out.Servers[key] = AutopilotServer{
			ID:          s.ID,
			Name:        s.Name,
			Address:     s.Address,
			NodeStatus:  s.NodeStatus,
			Status:      s.Status,
			NodeType:    s.NodeType,
			Version:     s.Version,
			LastIndex:   s.LastIndex,
			LastTerm:    s.LastTerm,
			Healthy:     s.Healthy,
			LastContact: lastContact,
			StableSince: stableSince,
		}
	}
	return out, nil
}

package nodeagent

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Pod addresses are PodIPPrefix+N with N in [firstPodHost, lastPodHost].
const (
	firstPodHost = 10
	lastPodHost  = 250
)

// errNoFreeIP is returned when every pod address is in use.
var errNoFreeIP = errors.New("no free pod address")

// ipAllocator hands out pod addresses: the lowest free one, or a preferred one (the
// address a pod already had before an agent restart) when it is free. Keys are pod
// UIDs; allocating twice for the same key returns the same address.
type ipAllocator struct {
	prefix string
	mu     sync.Mutex
	byKey  map[string]int
	owner  map[int]string
}

func newIPAllocator(prefix string) *ipAllocator {
	return &ipAllocator{prefix: prefix, byKey: map[string]int{}, owner: map[int]string{}}
}

// Allocate returns key's address, allocating one if key has none.
func (a *ipAllocator) Allocate(key, preferred string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, ok := a.byKey[key]; ok {
		return a.prefix + strconv.Itoa(n), nil
	}
	if rest, ok := strings.CutPrefix(preferred, a.prefix); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= firstPodHost && n <= lastPodHost {
			if _, used := a.owner[n]; !used {
				a.take(key, n)
				return preferred, nil
			}
		}
	}
	for n := firstPodHost; n <= lastPodHost; n++ {
		if _, used := a.owner[n]; !used {
			a.take(key, n)
			return a.prefix + strconv.Itoa(n), nil
		}
	}
	return "", fmt.Errorf("%w: all of %s%d..%d are taken (delete pods or widen the range)", errNoFreeIP, a.prefix, firstPodHost, lastPodHost)
}

func (a *ipAllocator) take(key string, n int) {
	a.byKey[key] = n
	a.owner[n] = key
}

// Release frees key's address and returns it, or "" when key had none.
func (a *ipAllocator) Release(key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.byKey[key]
	if !ok {
		return ""
	}
	delete(a.byKey, key)
	delete(a.owner, n)
	return a.prefix + strconv.Itoa(n)
}

// addrManager adds and removes pod addresses on the loopback device, and the network
// namespaces of isolated pods (podnet.go).
type addrManager interface {
	Add(ip string) error
	Del(ip string) error
	Isolate(uid types.UID, ip string) (netnsPath string, err error)
	Unisolate(uid types.UID) error
}

// ipCommand manages addresses with iproute2's ip command.
type ipCommand struct{}

// Add adds ip/32 to lo; an address that is already there is fine.
func (ipCommand) Add(ip string) error {
	out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") {
		return fmt.Errorf("failed to add %s/32 to lo: %w: %s (the agent must run as root inside the rig's network namespace)", ip, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Del removes ip/32 from lo; an address that is not there is fine.
func (ipCommand) Del(ip string) error {
	out, err := exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Cannot assign requested address") {
		return fmt.Errorf("failed to delete %s/32 from lo: %w: %s", ip, err, strings.TrimSpace(string(out)))
	}
	return nil
}

package nodeagent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodNetworkAnnotation, set to PodNetworkIsolated on a pod, gives the pod a network
// namespace of its own instead of an address on the rig's loopback device: a veth pair
// whose rig end (PodVeth) is the pod's only way out, so a test can cut the pod off
// from every other pod, every client and the API server at once (a network partition)
// by taking that end down (Partition), and heal it (Heal). Other pods keep the
// shared network stack.
const (
	PodNetworkAnnotation = "rig.baokeeper.dev/pod-network"
	PodNetworkIsolated   = "isolated"
)

// PodVeth is the rig's end of an isolated pod's veth pair, named after the pod's UID
// (interface names are at most 15 bytes).
func PodVeth(uid types.UID) string { return "bk" + shortUID(uid) }

// PodNetnsPrefix starts the name (ip netns) of every isolated pod's network namespace.
const PodNetnsPrefix = "bkpod-"

// podNetns is the name (ip netns) of an isolated pod's network namespace.
func podNetns(uid types.UID) string { return PodNetnsPrefix + shortUID(uid) }

// DeletePodNetns removes every isolated pod's network namespace that is left (a
// crashed agent's); the rig's launcher calls it once the rig has stopped.
func DeletePodNetns() error {
	names, _ := filepath.Glob(filepath.Join("/run/netns", PodNetnsPrefix+"*"))
	var errs []string
	for _, n := range names {
		if out, err := exec.Command("ip", "netns", "del", filepath.Base(n)).CombinedOutput(); err != nil && !notFound(string(out)) {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", filepath.Base(n), err, strings.TrimSpace(string(out))))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("failed to delete pod network namespaces: %s", strings.Join(errs, "; "))
	}
	return nil
}

func shortUID(uid types.UID) string {
	s := strings.ReplaceAll(string(uid), "-", "")
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

// Partition cuts the isolated pod with this UID off the network: the rig's end of its
// veth pair goes down, so nothing reaches the pod and nothing it sends leaves it. Its
// processes go on running. Run it in the rig's network namespace.
func Partition(uid types.UID) error {
	if out, err := exec.Command("ip", "link", "set", PodVeth(uid), "down").CombinedOutput(); err != nil {
		return fmt.Errorf("failed to partition the pod (ip link set %s down): %w: %s", PodVeth(uid), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Heal undoes Partition: the link comes up and the route to ip, the pod's address,
// which the kernel removed with the link, is put back.
func Heal(uid types.UID, ip string) error {
	veth := PodVeth(uid)
	for _, args := range [][]string{{"link", "set", veth, "up"}, {"route", "replace", ip + "/32", "dev", veth}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("failed to heal the pod (ip %s): %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// isolated reports whether pod asked for a network namespace of its own.
func isolated(pod *corev1.Pod) bool {
	return !pod.Spec.HostNetwork && pod.Annotations[PodNetworkAnnotation] == PodNetworkIsolated
}

// Isolate creates uid's network namespace with ip on its eth0, routed through a veth
// pair from the rig's namespace, and returns the namespace's path for the pod's
// processes to join. The pod reaches everything the rig's namespace reaches through a
// default route on eth0 (the rig end answers ARP for what it routes: proxy ARP), and
// the rig forwards between pods. What an earlier attempt left behind is removed first.
func (ipCommand) Isolate(uid types.UID, ip string) (string, error) {
	ns, veth := podNetns(uid), PodVeth(uid)
	_ = ipCommand{}.Unisolate(uid)
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "addr", "add", ip + "/32", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "route", "add", "default", "dev", "eth0"},
		{"link", "set", veth, "up"},
		{"route", "add", ip + "/32", "dev", veth},
	}
	for i, args := range steps {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			_ = ipCommand{}.Unisolate(uid)
			return "", fmt.Errorf("failed to set up the pod's network namespace (ip %s): %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		if i == 1 {
			// Before the link is up: the rig end answers ARP for the addresses it routes
			// elsewhere, and the rig forwards between pods.
			for _, f := range []string{
				filepath.Join("/proc/sys/net/ipv4/conf", veth, "proxy_arp"),
				"/proc/sys/net/ipv4/ip_forward",
			} {
				if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
					_ = ipCommand{}.Unisolate(uid)
					return "", fmt.Errorf("failed to set %s: %w", f, err)
				}
			}
		}
	}
	return filepath.Join("/run/netns", ns), nil
}

// Unisolate removes uid's network namespace and veth pair; what is not there is fine.
func (ipCommand) Unisolate(uid types.UID) error {
	var errs []string
	for _, args := range [][]string{{"link", "del", PodVeth(uid)}, {"netns", "del", podNetns(uid)}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil && !notFound(string(out)) {
			errs = append(errs, fmt.Sprintf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("failed to remove the pod's network namespace: %s", strings.Join(errs, "; "))
	}
	return nil
}

func notFound(out string) bool {
	for _, s := range []string{"Cannot find device", "No such file", "does not exist"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

package testenv

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// StartEnvtest starts a real kube-apiserver and etcd with the CRDs of crdDirs (each
// must exist) from a Ginkgo BeforeSuite, and stops them when the suite ends. Without
// the binaries the suite is skipped with the reason, or fails when integration tests
// are required (make test).
func StartEnvtest(crdDirs ...string) *envtest.Environment {
	GinkgoHelper()
	assets, skip := Assets()
	if skip != "" {
		if Required() {
			Fail(skip)
		}
		Skip(skip)
	}
	env := &envtest.Environment{CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: assets}
	_, err := env.Start()
	Expect(err).NotTo(HaveOccurred(), "starting envtest from %s", assets)
	DeferCleanup(env.Stop)
	return env
}

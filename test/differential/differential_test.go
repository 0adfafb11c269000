package differential

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
)

// Every case runs in one ordered container that starts both schedulers
// once; ContinueOnFailure, because each case is independent and a run
// should report every case that fails, not stop at the first.
var _ = Describe("troupe-scheduler against kube-scheduler", Ordered, ContinueOnFailure, func() {
	ctx := context.Background()
	var s *schedulers
	seed := suiteSeed()
	BeforeAll(func() {
		GinkgoWriter.Printf("generated cases: seed %d (rerun them with %s=%d)\n", seed, seedEnv, seed)
		s = startSchedulers(ctx)
	})

	Describe("single pod, hand-written", func() {
		for _, sc := range singlePodCases() {
			It(sc.name, func() { runSingle(ctx, s, sc) })
		}
	})

	Describe("single pod, generated", func() {
		for i := range *randomCasesFlag {
			sc := generate(seed, i)
			It(sc.name, func() { runSingle(ctx, s, sc) })
		}
	})

	Describe("gangs, troupe-scheduler only", func() {
		gangSpecs(ctx, func() *schedulers { return s })
	})
})

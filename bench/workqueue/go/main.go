// SPDX-License-Identifier: MIT
// Command bench_workqueue_go is the client-go peer of bench_workqueue.c (BENCH.md
// U1): the same four shapes against k8s.io/client-go/util/workqueue, unnamed (no
// metrics) and named (Prometheus metrics through component-base's provider, the
// code controller-runtime's provider was copied from).
package main

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // registers the metrics provider
	testingclock "k8s.io/utils/clock/testing"
)

var keys [1000]string

func newQueue(name string) workqueue.TypedInterface[string] {
	return workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name})
}

var nameSeq int

var lastProcessed int64

// uniqueName: Prometheus series are per name; a fresh one per run keeps runs apart.
func uniqueName(name string) string {
	if name == "" {
		return ""
	}
	nameSeq++
	return fmt.Sprintf("%s%d", name, nameSeq)
}

func benchSeq(name string) float64 {
	const iter = 20000
	q := newQueue(uniqueName(name))
	var total time.Duration
	for i := 0; i < iter; i++ {
		t0 := time.Now()
		for j := 0; j < 100; j++ {
			q.Add(keys[j])
			k, _ := q.Get()
			q.Done(k)
		}
		total += time.Since(t0)
	}
	q.ShutDown()
	return float64(total.Nanoseconds()) / (iter * 100)
}

func benchDedup(name string) float64 {
	const n = 2000000
	q := newQueue(uniqueName(name))
	q.Add("default/the-object")
	t0 := time.Now()
	for i := 0; i < n; i++ {
		q.Add("default/the-object")
	}
	d := time.Since(t0)
	q.ShutDown()
	return float64(d.Nanoseconds()) / n
}

var nProducers, nWorkers int
var distinct bool
var distinctKeys []string

const contendedAdds = 1000000

func benchContended(name string) float64 {
	q := newQueue(uniqueName(name))
	var processed atomic.Int64
	var pwg, wwg sync.WaitGroup
	per := contendedAdds / nProducers
	t0 := time.Now()
	for i := 0; i < nWorkers; i++ {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			var n int64
			for {
				k, quit := q.Get()
				if quit {
					break
				}
				q.Done(k)
				n++
			}
			processed.Add(n)
		}()
	}
	for i := 0; i < nProducers; i++ {
		pwg.Add(1)
		go func(id int) {
			defer pwg.Done()
			r := uint32(id)*2654435761 + 1
			for j := 0; j < per; j++ {
				r = r*1103515245 + 12345
				if distinct {
					q.Add(distinctKeys[id*per+j])
				} else {
					q.Add(keys[(r>>8)%1000])
				}
			}
		}(i)
	}
	pwg.Wait()
	q.ShutDown()
	wwg.Wait()
	lastProcessed = processed.Load()
	return float64(time.Since(t0).Nanoseconds()) / contendedAdds
}

func benchAddAfter(name string) float64 {
	const n = 200000
	clock := testingclock.NewFakeClock(time.Now())
	q := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
		Name: uniqueName(name), Clock: clock})
	ks := make([]string, n)
	for i := range ks {
		ks[i] = strconv.Itoa(i)
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		q.AddAfter(ks[i], time.Duration(rand.Int63n(int64(10*time.Minute))))
	}
	clock.Step(11 * time.Minute)
	for i := 0; i < n; i++ {
		_, _ = q.Get()
	}
	d := time.Since(t0)
	q.ShutDown()
	return float64(d.Nanoseconds()) / n
}

func report(shape, name string, fn func(string) float64, rounds int) {
	v := make([]float64, rounds)
	for i := range v {
		v[i] = fn(name)
	}
	sort.Float64s(v)
	kind := "plain"
	if name != "" {
		kind = "metrics"
	}
	fmt.Printf("%-10s %-8s %8.1f ns/op  (min %.1f, max %.1f, %d rounds)", shape, kind,
		v[rounds/2], v[0], v[rounds-1], rounds)
	if shape == "contended" {
		d := ""
		if distinct {
			d = " distinct"
		}
		fmt.Printf("  %dx%d%s processed %d", nProducers, nWorkers, d, lastProcessed)
	}
	fmt.Println()
}

func main() {
	rounds := 5
	if len(os.Args) > 1 {
		if n, err := strconv.Atoi(os.Args[1]); err == nil && n >= 1 && n <= 64 {
			rounds = n
		}
	}
	for i := range keys {
		keys[i] = fmt.Sprintf("namespace-%d/key-%d", i%10, i)
	}
	for i := 0; i < 100; i++ {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	report("seq", "", benchSeq, rounds)
	report("seq", "bench", benchSeq, rounds)
	report("dedup", "", benchDedup, rounds)
	report("dedup", "bench", benchDedup, rounds)
	distinctKeys = make([]string, contendedAdds)
	for i := range distinctKeys {
		distinctKeys[i] = fmt.Sprintf("d-%d", i)
	}
	for _, sh := range [][3]int{{1, 1, 0}, {4, 4, 0}, {1, 1, 1}, {4, 4, 1}} {
		nProducers, nWorkers, distinct = sh[0], sh[1], sh[2] == 1
		report("contended", "", benchContended, rounds)
		report("contended", "bench", benchContended, rounds)
	}
	report("add_after", "", benchAddAfter, rounds)
	report("add_after", "bench", benchAddAfter, rounds)
}

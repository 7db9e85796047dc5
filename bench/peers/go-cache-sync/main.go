// SPDX-License-Identifier: MIT

// go-cache-sync is the client-go peer of bench/cache_sync: a shared informer on
// the ConfigMaps (or, with -resource pods, the Pods) of one namespace, JSON on
// the wire (-protobuf: protobuf, client-go's default), managedFields dropped by a transform, as
// controller-runtime's cache does with DefaultTransform =
// TransformStripManagedFields. It prints the same lines as
// the C harness: time start -> synced, CPU, VmRSS and VmHWM once synced and
// after the settle time, the objects cached and lists= (1, plus one per
// relist; client-go has no counter for it, so this counts the requests that
// stream a list, the watches with sendInitialEvents, which are all of them
// while the server supports the streaming list).
//
// Usage: go-cache-sync -kubeconfig FILE -namespace NS [-resource configmaps|pods] [-protobuf] [-settle SECONDS]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func status(field string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), field+":") {
			return strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s.Text(), field+":"), "kB"))
		}
	}
	return "?"
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	ns := flag.String("namespace", "default", "namespace to cache")
	resource := flag.String("resource", "configmaps", "what to cache: configmaps or pods")
	settle := flag.Float64("settle", 2, "seconds to wait after sync before reading RSS")
	proto := flag.Bool("protobuf", false, "protobuf on the wire, client-go's default for built-in kinds")
	flag.Parse()
	if *resource != "configmaps" && *resource != "pods" {
		fmt.Fprintln(os.Stderr, "-resource is configmaps or pods")
		os.Exit(2)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(1)
	}
	impl := "client-go"
	if *proto {
		// what client-go's typed clientset asks for when the config sets nothing
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		impl = "client-go-proto"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	start := time.Now()
	var lists atomic.Int64
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithNamespace(*ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				lists.Add(1)
			}
		}),
		informers.WithTransform(func(o interface{}) (interface{}, error) {
			if m, ok := o.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return o, nil
		}))
	var inf cache.SharedIndexInformer
	if *resource == "pods" {
		inf = factory.Core().V1().Pods().Informer()
	} else {
		inf = factory.Core().V1().ConfigMaps().Informer()
	}
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		fmt.Fprintln(os.Stderr, "not synced")
		os.Exit(1)
	}
	synced := time.Since(start)
	cpu := cpuSeconds()
	rss, hwm := status("VmRSS"), status("VmHWM")
	time.Sleep(time.Duration(*settle * float64(time.Second)))
	runtime.KeepAlive(inf)
	fmt.Printf("impl=%s objects=%d sync_s=%.3f cpu_s=%.3f rss_synced_kb=%s hwm_synced_kb=%s"+
		" rss_kb=%s hwm_kb=%s lists=%d\n",
		impl, len(inf.GetStore().ListKeys()), synced.Seconds(), cpu, rss, hwm, status("VmRSS"), status("VmHWM"),
		lists.Load())
	close(stop)
}

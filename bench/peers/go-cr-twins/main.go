// SPDX-License-Identifier: MIT
//
// go-cr-twins: controller-runtime's side of three kcr benchmarks of issue 25,
// each a subcommand that does what the kcr program does and prints the same
// line, so that one script can alternate the two in one run:
//
//	priority   bench/workqueue/priority_api.c (run_priority_api.sh): the
//	           priority queue on or off (controller.Options.UsePriorityQueue;
//	           the builder's handler gives initial-list events LowPriority)
//	failover   bench/failover/failover.c (run.sh): a leader-elected manager
//	           on a 4 s lease, one controller, warm-up on or off
//	           (controller.Options.EnableWarmup)
//	cache-sync bench/cache_sync/cache_sync.c -m trim|wire (metadata.sh): one
//	           informer on the ConfigMaps, as PartialObjectMetadata (wire,
//	           builder.OnlyMetadata's cache) or as whole ConfigMaps reduced
//	           to their metadata by a transform (trim); rx_bytes= is what
//	           the server sent until synced, counted as TLS records read
//	           from the connections (cache_sync -P counts them in a proxy)
//
// All of them: JSON on the wire (the metadata client of client-go asks for
// protobuf and cannot be told otherwise: wire is protobuf; -protobuf makes
// the rest protobuf too, controller-runtime's default, and the lines then
// say impl=cr-proto), managedFields
// dropped by the cache's transform, no client-side rate limit, metrics and
// probes off, logs at warn.
//
// Usage: go-cr-twins priority -kubeconfig F -namespace NS -n N -pq on|off [-work-ms W] [-protobuf]
//
//	go-cr-twins failover -kubeconfig F -namespace NS -lease L -n N [-warm] [-x] [-protobuf]
//	go-cr-twins cache-sync -kubeconfig F -namespace NS -meta trim|wire [-settle S] [-protobuf]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const target = "cm-zz-target" // sorts after every cm-<i>: last of the initial list

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "go-cr-twins: "+format+"\n", a...)
	os.Exit(1)
}

// rxBytes counts what the server sent: bytes read from the TCP connections
// (TLS records), as cache_sync -P's proxy counts them.
var rxBytes atomic.Int64

type countingConn struct{ net.Conn }

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	rxBytes.Add(int64(n))
	return n, err
}

// useProtobuf (-protobuf): protobuf for built-in kinds, controller-runtime's
// default, which BENCH.md wants measured too (cr-proto); else JSON.
var useProtobuf bool

func protobufFlag(fs *flag.FlagSet) {
	fs.BoolVar(&useProtobuf, "protobuf", false, "protobuf for built-in kinds (controller-runtime's default); else JSON")
}

// implName is the impl= of the printed lines: cr, or cr-proto with -protobuf.
func implName() string {
	if useProtobuf {
		return "cr-proto"
	}
	return "cr"
}

// restConfig loads kubeconfig as the kcr programs use it: JSON (unless
// -protobuf), no rate limit.
func restConfig(kubeconfig string) *rest.Config {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		die("kubeconfig: %v", err)
	}
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	if useProtobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	cfg.QPS = -1
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c}, nil
	}
	return cfg
}

func managerOptions(ns string) ctrl.Options {
	return ctrl.Options{
		Scheme: clientgoscheme.Scheme,
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
}

func priority(args []string) {
	fs := flag.NewFlagSet("priority", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	ns := fs.String("namespace", "", "namespace holding cm-<i>")
	n := fs.Int("n", 0, "objects of the initial list, cm-zz-target not counted")
	pq := fs.String("pq", "on", "priority queue: on or off")
	workMs := fs.Int("work-ms", 1, "sleep per reconcile")
	protobufFlag(fs)
	_ = fs.Parse(args)
	if *ns == "" || *n <= 0 || (*pq != "on" && *pq != "off") {
		die("usage: priority -kubeconfig F -namespace NS -n N -pq on|off [-work-ms W]")
	}
	cfg := restConfig(*kubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	direct, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		die("client: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: *ns},
		Data: map[string]string{"v": "0"}}
	if err := direct.Create(ctx, cm); client.IgnoreAlreadyExists(err) != nil {
		die("create %s: %v", target, err)
	}
	marker := fmt.Sprintf("cr-%s-%d-%d", *pq, os.Getpid(), time.Now().UnixNano())
	var markerSet atomic.Bool
	var reconciled, waiting atomic.Int64
	var targetAt atomic.Int64
	var t0 time.Time

	mgr, err := ctrl.NewManager(cfg, managerOptions(*ns))
	if err != nil {
		die("manager: %v", err)
	}
	cached := mgr.GetClient()
	work := time.Duration(*workMs) * time.Millisecond
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("prio").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, UsePriorityQueue: ptr.To(*pq == "on")}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			if req.Name == target {
				if markerSet.Load() && targetAt.Load() == 0 {
					var got corev1.ConfigMap
					if cached.Get(ctx, req.NamespacedName, &got) == nil && got.Data["v"] == marker {
						waiting.Store(int64(*n) - reconciled.Load())
						targetAt.Store(int64(time.Since(t0)))
					}
				}
				return reconcile.Result{}, nil
			}
			reconciled.Add(1)
			time.Sleep(work)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		die("controller: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	for i := 0; i < 300000 && reconciled.Load() < 10; i++ {
		time.Sleep(time.Millisecond)
	}
	if reconciled.Load() < 10 {
		die("the initial list did not start")
	}
	markerSet.Store(true)
	patch := fmt.Appendf(nil, `{"data":{"v":%q}}`, marker)
	t0 = time.Now()
	if err := direct.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: *ns}},
		client.RawPatch(types.MergePatchType, patch)); err != nil {
		die("patch: %v", err)
	}
	patched := time.Since(t0)
	for i := 0; i < 600000 && targetAt.Load() == 0; i++ {
		time.Sleep(time.Millisecond)
	}
	if targetAt.Load() == 0 {
		die("the change was not seen in 600 s")
	}
	fmt.Printf("impl=%s pq=%s n=%d work_ms=%d latency_ms=%.1f waiting=%d patch_ms=%.1f\n", implName(), *pq, *n, *workMs,
		float64(targetAt.Load())/1e6, waiting.Load(), float64(patched)/1e6)
	cancel()
	<-done
}

func failover(args []string) {
	fs := flag.NewFlagSet("failover", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	ns := fs.String("namespace", "", "namespace of the ConfigMaps and the Lease")
	lease := fs.String("lease", "", "Lease name")
	n := fs.Int64("n", 0, "ConfigMaps to reconcile before ALL")
	warm := fs.Bool("warm", false, "EnableWarmup")
	exitAfterAll := fs.Bool("x", false, "exit after ALL")
	protobufFlag(fs)
	_ = fs.Parse(args)
	if *ns == "" || *lease == "" || *n <= 0 {
		die("usage: failover -kubeconfig F -namespace NS -lease L -n N [-warm] [-x]")
	}
	cfg := restConfig(*kubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := managerOptions(*ns)
	o.LeaderElection = true
	o.LeaderElectionID = *lease
	o.LeaderElectionNamespace = *ns
	o.LeaseDuration = ptr.To(4 * time.Second)
	o.RenewDeadline = ptr.To(3 * time.Second)
	o.RetryPeriod = ptr.To(500 * time.Millisecond)
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		die("manager: %v", err)
	}
	var first atomic.Bool
	var count atomic.Int64
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("failover").
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, EnableWarmup: ptr.To(*warm)}).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			if !first.Swap(true) {
				fmt.Printf("FIRST %d\n", time.Now().UnixNano())
			}
			if count.Add(1) == *n {
				fmt.Printf("ALL %d %d\n", time.Now().UnixNano(), *n)
				if *exitAfterAll {
					cancel()
				}
			}
			return reconcile.Result{}, nil
		}))
	if err != nil {
		die("controller: %v", err)
	}
	go func() {
		select {
		case <-mgr.Elected():
			fmt.Printf("ELECTED %d\n", time.Now().UnixNano())
		case <-ctx.Done():
		}
	}()
	if err := mgr.Start(ctx); err != nil {
		die("run: %v", err)
	}
}

// listCounter counts the requests for the ConfigMaps that fetch an initial
// list (watches that stream one, sendInitialEvents=true, and pages of paged
// lists) and the bytes of all response bodies as the client reads them, after
// the transport has inflated any gzip.
type listCounter struct {
	rt             http.RoundTripper
	streams, pages *atomic.Int64
}

var bodyBytes atomic.Int64

type countingBody struct{ io.ReadCloser }

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	bodyBytes.Add(int64(n))
	return n, err
}

func (l listCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	if strings.HasSuffix(r.URL.Path, "/configmaps") {
		if q.Get("sendInitialEvents") == "true" {
			l.streams.Add(1)
		} else if q.Get("watch") != "true" && r.Method == http.MethodGet {
			l.pages.Add(1)
		}
	}
	resp, err := l.rt.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = countingBody{resp.Body}
	}
	return resp, err
}

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

func cacheSync(args []string) {
	start := time.Now()
	fs := flag.NewFlagSet("cache-sync", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	ns := fs.String("namespace", "", "namespace to cache")
	meta := fs.String("meta", "", "trim or wire")
	settle := fs.Float64("settle", 0, "seconds to wait after sync before reading RSS")
	protobufFlag(fs)
	_ = fs.Parse(args)
	if *ns == "" || (*meta != "trim" && *meta != "wire") {
		die("usage: cache-sync -kubeconfig F -namespace NS -meta trim|wire [-settle S]")
	}
	cfg := restConfig(*kubeconfig)
	var streams, pages atomic.Int64
	inner := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if inner != nil {
			rt = inner(rt)
		}
		return listCounter{rt, &streams, &pages}
	}
	o := cache.Options{
		Scheme:            clientgoscheme.Scheme,
		DefaultNamespaces: map[string]cache.Config{*ns: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	}
	var obj client.Object
	if *meta == "wire" {
		pom := &metav1.PartialObjectMetadata{}
		pom.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		obj = pom
	} else {
		obj = &corev1.ConfigMap{}
		// whole ConfigMaps received, reduced to their metadata on arrival
		o.ByObject = map[client.Object]cache.ByObject{obj: {Transform: func(in any) (any, error) {
			if cm, ok := in.(*corev1.ConfigMap); ok {
				cm.ManagedFields = nil
				cm.Data = nil
				cm.BinaryData = nil
			}
			return in, nil
		}}}
	}
	c, err := cache.New(cfg, o)
	if err != nil {
		die("cache: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.GetInformer(ctx, obj); err != nil {
		die("informer: %v", err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		die("not synced")
	}
	synced := time.Since(start)
	cpu := cpuSeconds()
	rx, body := rxBytes.Load(), bodyBytes.Load()
	rss, hwm := status("VmRSS"), status("VmHWM")
	var objects int
	if *meta == "wire" {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		_ = c.List(ctx, l, client.InNamespace(*ns))
		objects = len(l.Items)
	} else {
		l := &corev1.ConfigMapList{}
		_ = c.List(ctx, l, client.InNamespace(*ns))
		objects = len(l.Items)
	}
	time.Sleep(time.Duration(*settle * float64(time.Second)))
	runtime.KeepAlive(c)
	fmt.Printf("impl=%s objects=%d sync_s=%.3f cpu_s=%.3f rss_synced_kb=%s hwm_synced_kb=%s"+
		" rss_kb=%s hwm_kb=%s streamed_lists=%d list_pages=%d meta=%s rx_bytes=%d rx_body_bytes=%d\n",
		implName(), objects, synced.Seconds(), cpu, rss, hwm, status("VmRSS"), status("VmHWM"),
		streams.Load(), pages.Load(), *meta, rx, body)
}

func main() {
	ctrl.SetLogger(zap.New(zap.Level(zapcore.WarnLevel)))
	if len(os.Args) < 2 {
		die("usage: go-cr-twins priority|failover|cache-sync ...")
	}
	switch os.Args[1] {
	case "priority":
		priority(os.Args[2:])
	case "failover":
		failover(os.Args[2:])
	case "cache-sync":
		cacheSync(os.Args[2:])
	default:
		die("unknown subcommand %q", os.Args[1])
	}
}

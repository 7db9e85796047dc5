// SPDX-License-Identifier: MIT
//
// driver: the App-throughput benchmark's referee (issue 17, BENCH.md M5/M6).
// It is not a peer: the same driver times kcr-operator, the controller-runtime
// twin and the null generator.
//
//	driver run -kubeconfig K -namespace NS -n N -mode before|during \
//	    -apiserver-pid P -etcd-pid E -impl NAME -- operator args...
//
// It creates namespace NS (and, for mode before, N Apps in it), syncs its own
// watches (Apps, and the children labelled managed-by=kcr-operator), scrapes
// the apiserver's /metrics, starts the operator as a child process (mode
// during: then creates the Apps), and waits until every App is reconciled:
// status.observedGeneration = metadata.generation, the finalizer set, and its
// Deployment, Service and ConfigMap present. Then it reads the operator's and
// the apiserver's and etcd's CPU (utime+stime), stops the operator (SIGTERM),
// scrapes /metrics again and prints one JSON object: seconds to all reconciled,
// CPU seconds, the operator's VmRSS/VmHWM, and apiserver_request_total deltas
// by "VERB resource[/subresource]". Finally it clears the Apps' finalizers and
// deletes the namespace, waiting until it is gone, so runs do not overlap.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	appsGVR = schema.GroupVersionResource{Group: "kcr.dev", Version: "v1alpha1", Resource: "apps"}
	depGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	svcGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	cmGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "driver: "+f+"\n", a...)
	os.Exit(1)
}

func cpuSeconds(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100.0 // USER_HZ
}

func statusKB(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key+":") {
			v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return v
		}
	}
	return 0
}

var reqLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)
var labelRe = regexp.MustCompile(`(\w+)="([^"]*)"`)

func scrape(cs *kubernetes.Clientset) map[string]float64 {
	b, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		die("metrics: %v", err)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		m := reqLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		lab := map[string]string{}
		for _, kv := range labelRe.FindAllStringSubmatch(m[1], -1) {
			lab[kv[1]] = kv[2]
		}
		if lab["resource"] == "" {
			continue
		}
		k := lab["verb"] + " " + lab["resource"]
		if lab["subresource"] != "" {
			k += "/" + lab["subresource"]
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[k] += v
	}
	return out
}

func newApp(ns, name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kcr.dev/v1alpha1", "kind": "App",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"image": "nginx:1.27", "replicas": replicas, "port": int64(80),
			"env":    []any{map[string]any{"name": "GREETING", "value": "hi"}},
			"config": map[string]any{"index.html": "<h1>" + name + "</h1>"}},
	}}
}

func createApps(dc dynamic.Interface, ns string, n int, replicas int64) {
	var wg sync.WaitGroup
	next := int64(-1)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := atomic.AddInt64(&next, 1)
				if i >= int64(n) {
					return
				}
				_, err := dc.Resource(appsGVR).Namespace(ns).Create(context.Background(),
					newApp(ns, fmt.Sprintf("app-%05d", i), replicas), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					die("create app %d: %v", i, err)
				}
			}
		}()
	}
	wg.Wait()
}

func reconciled(app *unstructured.Unstructured, idx map[schema.GroupVersionResource]cache.Indexer) bool {
	og, _, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
	if og != app.GetGeneration() {
		return false
	}
	has := false
	for _, f := range app.GetFinalizers() {
		has = has || f == "kcr.dev/directory"
	}
	if !has {
		return false
	}
	key := app.GetNamespace() + "/" + app.GetName()
	for gvr, i := range idx {
		k := key
		if gvr == cmGVR {
			k += "-config"
		}
		if _, ok, _ := i.GetByKey(k); !ok {
			return false
		}
	}
	return true
}

func cleanup(dc dynamic.Interface, cs *kubernetes.Clientset, ns string) {
	ctx := context.Background()
	l, err := dc.Resource(appsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		var wg sync.WaitGroup
		ch := make(chan string)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for name := range ch {
					_, _ = dc.Resource(appsGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType,
						[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				}
			}()
		}
		for _, it := range l.Items {
			if len(it.GetFinalizers()) > 0 {
				ch <- it.GetName()
			}
		}
		close(ch)
		wg.Wait()
	}
	// The children first, each kind in one deletecollection, then the Apps:
	// left to the namespace controller and the garbage collector, 3000
	// children go one DELETE at a time and the next run overlaps with them.
	// The ReplicaSets are orphaned: the namespace controller sweeps them.
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kcr-operator"}
	bg := metav1.DeletePropagationOrphan // the namespace controller sweeps the ReplicaSets in one call
	for _, g := range []schema.GroupVersionResource{depGVR, svcGVR, cmGVR} {
		_ = dc.Resource(g).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &bg}, sel)
	}
	_ = dc.Resource(appsGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "driver: namespace %s still there after 5 minutes\n", ns)
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "run" {
		die("usage: driver run [flags] -- operator args...")
	}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	kc := fs.String("kubeconfig", "", "kubeconfig")
	ns := fs.String("namespace", "bench-apps", "namespace for the Apps (created, deleted after)")
	n := fs.Int("n", 1000, "Apps")
	mode := fs.String("mode", "before", "before: Apps exist when the operator starts; during: created after")
	replicas := fs.Int64("replicas", 0, "spec.replicas of each App")
	apiPid := fs.Int("apiserver-pid", 0, "kube-apiserver pid (CPU)")
	etcdPid := fs.Int("etcd-pid", 0, "etcd pid (CPU)")
	impl := fs.String("impl", "", "name printed in the result")
	timeout := fs.Duration("timeout", 15*time.Minute, "give up after")
	log := fs.String("log", "/dev/null", "operator's stdout and stderr")
	_ = fs.Parse(os.Args[2:])
	argv := fs.Args()
	if len(argv) == 0 {
		die("no operator command")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kc)
	if err != nil {
		die("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = -1, 1000
	dc := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: *ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		die("namespace: %v", err)
	}
	defer cleanup(dc, cs, *ns)
	if *mode == "before" {
		createApps(dc, *ns, *n, *replicas)
	}

	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, *ns, nil)
	fl := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, *ns, func(o *metav1.ListOptions) {
		o.LabelSelector = "app.kubernetes.io/managed-by=kcr-operator"
	})
	appInf := f.ForResource(appsGVR).Informer()
	idx := map[schema.GroupVersionResource]cache.Indexer{}
	for _, g := range []schema.GroupVersionResource{depGVR, svcGVR, cmGVR} {
		idx[g] = fl.ForResource(g).Informer().GetIndexer()
	}
	stop := make(chan struct{})
	f.Start(stop)
	fl.Start(stop)
	f.WaitForCacheSync(stop)
	fl.WaitForCacheSync(stop)

	before := scrape(cs)
	apiCPU0, etcdCPU0 := cpuSeconds(*apiPid), cpuSeconds(*etcdPid)
	logf, err := os.Create(*log)
	if err != nil {
		die("log: %v", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		die("start %s: %v", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	createSecs := 0.0
	if *mode == "during" {
		time.Sleep(2 * time.Second) // let the operator sync its (empty) caches
		t := time.Now()
		createApps(dc, *ns, *n, *replicas)
		createSecs = time.Since(t).Seconds()
		start = t
	}
	var done time.Time
	tick := time.NewTicker(50 * time.Millisecond)
	deadline := time.Now().Add(*timeout)
	var opCPU, apiCPU, etcdCPU float64
	var rss, hwm int64
	ok := false
loop:
	for {
		select {
		case err := <-exited:
			die("operator exited early: %v (log %s)", err, *log)
		case <-tick.C:
		}
		items := appInf.GetStore().List()
		if len(items) >= *n {
			all := true
			for _, it := range items {
				if !reconciled(it.(*unstructured.Unstructured), idx) {
					all = false
					break
				}
			}
			if all {
				done = time.Now()
				opCPU = cpuSeconds(cmd.Process.Pid)
				apiCPU, etcdCPU = cpuSeconds(*apiPid)-apiCPU0, cpuSeconds(*etcdPid)-etcdCPU0
				rss, hwm = statusKB(cmd.Process.Pid, "VmRSS"), statusKB(cmd.Process.Pid, "VmHWM")
				ok = true
				break loop
			}
		}
		if time.Now().After(deadline) {
			break loop
		}
	}
	// Let each implementation finish what it had queued (events), then stop it.
	time.Sleep(2 * time.Second)
	opCPUSettled := cpuSeconds(cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	after := scrape(cs)
	delta := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			delta[k] = d
		}
	}
	res := map[string]any{
		"impl": *impl, "n": *n, "mode": *mode, "replicas": *replicas, "ok": ok,
		"seconds":            done.Sub(start).Seconds(),
		"create_seconds":     createSecs,
		"operator_cpu_s":     opCPU,
		"operator_cpu_end_s": opCPUSettled,
		"apiserver_cpu_s":    apiCPU,
		"etcd_cpu_s":         etcdCPU,
		"rss_kb":             rss,
		"hwm_kb":             hwm,
		"requests":           delta,
	}
	close(stop)
	w := bufio.NewWriter(os.Stdout)
	_ = json.NewEncoder(w).Encode(res)
	_ = w.Flush()
	if !ok {
		fmt.Fprintf(os.Stderr, "driver: %s: not all %d Apps reconciled within %s\n", *impl, *n, *timeout)
	}
}

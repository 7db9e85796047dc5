// SPDX-License-Identifier: MIT
//
// null-generator: the App benchmark's ceiling (issue 17, BENCH.md). No
// framework, no cache, no reads but one LIST (or one WATCH with -watch):
// for every App it issues the writes a perfect App operator would issue, each
// as light as it can be, and nothing else:
//
//	PATCH  App (merge: add the finalizer)
//	POST   Deployment, Service, ConfigMap (what cmd/kcr-operator/app wants)
//	POST   one Event (Normal Created)
//	PATCH  the directory ConfigMap (merge: its one entry)
//	PATCH  App status (merge: observedGeneration, conditions)
//
// Built on client-go's dynamic client, JSON on the wire, no client-side rate
// limit, -workers goroutines (default 1, as the operators' one worker).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

type M = map[string]any

var (
	appsGVR   = schema.GroupVersionResource{Group: "kcr.dev", Version: "v1alpha1", Resource: "apps"}
	depGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	svcGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	eventsGVR = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
)

func children(app *unstructured.Unstructured) (dep, svc, cm M) {
	name, ns := app.GetName(), app.GetNamespace()
	spec, _ := app.Object["spec"].(M)
	labels := M{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name,
		"app.kubernetes.io/managed-by": "kcr-operator"}
	sel := M{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name}
	meta := func(n string) M {
		return M{"name": n, "namespace": ns, "labels": labels, "ownerReferences": []any{M{
			"apiVersion": "kcr.dev/v1alpha1", "kind": "App", "name": name, "uid": string(app.GetUID()),
			"controller": true, "blockOwnerDeletion": true}}}
	}
	port, _ := spec["port"].(int64)
	replicas, ok := spec["replicas"].(int64)
	if !ok {
		replicas = 1
	}
	config, _ := spec["config"].(M)
	b, _ := json.Marshal(config)
	sum := sha256.Sum256(b)
	c := M{"name": "app", "image": spec["image"],
		"ports":        []any{M{"name": "http", "containerPort": port, "protocol": "TCP"}},
		"volumeMounts": []any{M{"name": "config", "mountPath": "/etc/app", "readOnly": true}}}
	if env, ok := spec["env"]; ok {
		c["env"] = env
	}
	dep = M{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name), "spec": M{
		"replicas": replicas, "selector": M{"matchLabels": sel},
		"template": M{"metadata": M{"labels": labels, "annotations": M{"kcr.dev/config-hash": hex.EncodeToString(sum[:])[:16]}},
			"spec": M{"containers": []any{c},
				"volumes": []any{M{"name": "config", "configMap": M{"name": name + "-config"}}}}}}}
	svc = M{"apiVersion": "v1", "kind": "Service", "metadata": meta(name), "spec": M{"type": "ClusterIP",
		"selector": sel, "ports": []any{M{"name": "http", "protocol": "TCP", "port": port, "targetPort": port}}}}
	cm = M{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name + "-config"), "data": config}
	return
}

func must(err error, what string) {
	if err != nil && !apierrors.IsAlreadyExists(err) {
		fmt.Fprintf(os.Stderr, "null-generator: %s: %v\n", what, err)
	}
}

func one(ctx context.Context, dc dynamic.Interface, dirNS string, app *unstructured.Unstructured) {
	ns, name := app.GetNamespace(), app.GetName()
	apps := dc.Resource(appsGVR).Namespace(ns)
	_, err := apps.Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["kcr.dev/directory"]}}`), metav1.PatchOptions{})
	must(err, "finalizer "+name)
	dep, svc, cm := children(app)
	for _, x := range []struct {
		gvr schema.GroupVersionResource
		obj M
	}{{depGVR, dep}, {svcGVR, svc}, {cmGVR, cm}} {
		_, err := dc.Resource(x.gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: x.obj}, metav1.CreateOptions{})
		must(err, "create "+x.gvr.Resource+" "+name)
	}
	now := time.Now().UTC()
	ev := M{"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":            M{"name": fmt.Sprintf("%s.%x", name, now.UnixNano()), "namespace": ns},
		"eventTime":           now.Format("2006-01-02T15:04:05.000000Z"),
		"reportingController": "kcr.dev/null-generator", "reportingInstance": "null-generator",
		"action": "Create", "reason": "Created", "type": "Normal", "note": "Created Deployment " + ns + "/" + name,
		"regarding": M{"apiVersion": "kcr.dev/v1alpha1", "kind": "App", "namespace": ns, "name": name,
			"uid": string(app.GetUID()), "resourceVersion": app.GetResourceVersion()}}
	_, err = dc.Resource(eventsGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: ev}, metav1.CreateOptions{})
	must(err, "event "+name)
	port, _, _ := unstructured.NestedInt64(app.Object, "spec", "port")
	dir, _ := json.Marshal(M{"data": M{ns + "." + name: fmt.Sprintf("http://%s.%s.svc:%d", name, ns, port)}})
	_, err = dc.Resource(cmGVR).Namespace(dirNS).Patch(ctx, "app-directory", types.MergePatchType, dir, metav1.PatchOptions{})
	must(err, "directory "+name)
	ts := now.Format(time.RFC3339)
	gen := app.GetGeneration()
	cond := func(t, s, r, m string) M {
		return M{"type": t, "status": s, "reason": r, "message": m, "observedGeneration": gen, "lastTransitionTime": ts}
	}
	st, _ := json.Marshal(M{"status": M{"observedGeneration": gen, "replicas": 0, "readyReplicas": 0,
		"selector": "app.kubernetes.io/name=" + name + ",app.kubernetes.io/instance=" + name,
		"url":      fmt.Sprintf("http://%s.%s.svc:%d", name, ns, port),
		"conditions": []any{cond("Available", "True", "ScaledToZero", "spec.replicas is 0"),
			cond("Progressing", "True", "Creating", "creating the Deployment"),
			cond("Degraded", "False", "ReconcileSucceeded", "all children are as the spec says")}}})
	_, err = apps.Patch(ctx, name, types.MergePatchType, st, metav1.PatchOptions{}, "status")
	must(err, "status "+name)
}

func main() {
	kc := flag.String("kubeconfig", "", "kubeconfig")
	ns := flag.String("namespace", "", "the Apps' namespace")
	dirNS := flag.String("directory-namespace", "default", "namespace of the directory ConfigMap")
	workers := flag.Int("workers", 1, "concurrent Apps")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "null-generator:", err)
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = -1, 1000
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	dc := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()
	dir := &unstructured.Unstructured{Object: M{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": M{"name": "app-directory", "namespace": *dirNS,
			"labels": M{"app.kubernetes.io/managed-by": "kcr-operator"}}, "data": M{}}}
	_, err = dc.Resource(cmGVR).Namespace(*dirNS).Create(ctx, dir, metav1.CreateOptions{})
	must(err, "directory")

	ch := make(chan *unstructured.Unstructured, 1024)
	var wg sync.WaitGroup
	for i := 0; i < *workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for app := range ch {
				one(ctx, dc, *dirNS, app)
			}
		}()
	}
	// One watch with the initial state, as a streaming list: every App once, new
	// ones as they come. Apps already reconciled (finalizer set) are skipped.
	seen := map[string]bool{}
	w, err := dc.Resource(appsGVR).Namespace(*ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "null-generator: watch:", err)
		os.Exit(1)
	}
	fmt.Println("synced")
	for e := range w.ResultChan() {
		if e.Type != watch.Added {
			continue
		}
		app := e.Object.(*unstructured.Unstructured)
		if seen[app.GetName()] || len(app.GetFinalizers()) > 0 {
			continue
		}
		seen[app.GetName()] = true
		ch <- app
	}
	close(ch)
	wg.Wait()
}

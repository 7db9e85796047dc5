// SPDX-License-Identifier: MIT
//
// go-controller-runtime: the App operator of kcr (docs/operator.md,
// cmd/kcr-operator/app/) written with controller-runtime, as the benchmark's
// peer (issue 17, shared BENCH.md). Same contract as kcr-operator: For App with
// the generation predicate, Owns Deployment, Service and ConfigMap; the child
// caches limited to app.kubernetes.io/managed-by=kcr-operator; managedFields
// stripped; Apps read from the cache (unstructured, Cache.Unstructured);
// the same calls per pass: finalizer by update (PUT), children created or
// merge-updated when not a superset of what the App wants, the directory
// ConfigMap read uncached and updated, status only when it changed, one Event
// per created or updated child (events.k8s.io/v1 recorder).
//
// Children are typed (so -protobuf has a meaning); "up to date" and the merge
// run on their unstructured form, as kcr's do on JSON.
//
// Flags: --kubeconfig (controller-runtime's), -namespace, -directory-namespace,
// -protobuf, -qps/-burst (default: no client-side limit), -workers, -fifo
// (controller-runtime's default is its priority queue, which handles events
// after the initial list before the initial list's items: a new App's second
// pass comes before the next App's first; kcr's workqueue is a FIFO).
// It prints "synced <seconds since start>" when its caches are synced.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	group      = "kcr.dev"
	version    = "v1alpha1"
	finalizer  = "kcr.dev/directory"
	directory  = "app-directory"
	lName      = "app.kubernetes.io/name"
	lInstance  = "app.kubernetes.io/instance"
	lManagedBy = "app.kubernetes.io/managed-by"
	managedBy  = "kcr-operator"
	hashAnn    = "kcr.dev/config-hash"
)

var appGVK = schema.GroupVersionKind{Group: group, Version: version, Kind: "App"}

type reconciler struct {
	c      client.Client
	direct client.Reader
	rec    recorder.EventRecorder
	dirNS  string
	scheme *runtime.Scheme
}

type M = map[string]any

func spec(app *unstructured.Unstructured) M {
	s, _ := app.Object["spec"].(M)
	return s
}

func port(app *unstructured.Unstructured) int64 {
	p, ok := spec(app)["port"].(int64)
	if !ok || p < 1 || p > 65535 {
		return 0
	}
	return p
}

func replicas(app *unstructured.Unstructured) int64 {
	if r, ok := spec(app)["replicas"].(int64); ok {
		return r
	}
	return 1
}

func config(app *unstructured.Unstructured) M {
	c, _ := spec(app)["config"].(M)
	if len(c) == 0 {
		return nil
	}
	return c
}

func appLabels(app *unstructured.Unstructured) M {
	return M{lName: app.GetName(), lInstance: app.GetName(), lManagedBy: managedBy}
}

func ownerRef(app *unstructured.Unstructured) M {
	return M{"apiVersion": group + "/" + version, "kind": "App", "name": app.GetName(),
		"uid": string(app.GetUID()), "controller": true, "blockOwnerDeletion": true}
}

func childMeta(app *unstructured.Unstructured, name string) M {
	return M{"name": name, "namespace": app.GetNamespace(), "labels": appLabels(app),
		"ownerReferences": []any{ownerRef(app)}}
}

func configHash(app *unstructured.Unstructured) string {
	c := config(app)
	if c == nil {
		c = M{}
	}
	b, _ := json.Marshal(c) // encoding/json sorts map keys: canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

func desiredDeployment(app *unstructured.Unstructured) M {
	sel := M{lName: app.GetName(), lInstance: app.GetName()}
	container := M{"name": "app", "image": spec(app)["image"]}
	var env []any
	if e, ok := spec(app)["env"].([]any); ok {
		for _, it := range e {
			m, _ := it.(M)
			n, _ := m["name"].(string)
			if n == "" {
				continue
			}
			x := M{"name": n}
			if v, _ := m["value"].(string); v != "" {
				x["value"] = v
			}
			env = append(env, x)
		}
	}
	if len(env) > 0 {
		container["env"] = env
	}
	if r, ok := spec(app)["resources"].(M); ok {
		res := M{}
		for _, k := range []string{"requests", "limits"} {
			if v, ok := r[k].(M); ok && len(v) > 0 {
				res[k] = runtime.DeepCopyJSONValue(v)
			}
		}
		if len(res) > 0 {
			container["resources"] = res
		}
	}
	if p := port(app); p != 0 {
		container["ports"] = []any{M{"name": "http", "containerPort": p, "protocol": "TCP"}}
	}
	tmd := M{"labels": appLabels(app)}
	pod := M{"containers": []any{container}}
	if config(app) != nil {
		container["volumeMounts"] = []any{M{"name": "config", "mountPath": "/etc/app", "readOnly": true}}
		tmd["annotations"] = M{hashAnn: configHash(app)}
		pod["volumes"] = []any{M{"name": "config", "configMap": M{"name": app.GetName() + "-config"}}}
	}
	return M{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": childMeta(app, app.GetName()),
		"spec": M{"replicas": replicas(app), "selector": M{"matchLabels": sel},
			"template": M{"metadata": tmd, "spec": pod}}}
}

func desiredService(app *unstructured.Unstructured) M {
	p := port(app)
	if p == 0 {
		return nil
	}
	return M{"apiVersion": "v1", "kind": "Service", "metadata": childMeta(app, app.GetName()),
		"spec": M{"type": "ClusterIP", "selector": M{lName: app.GetName(), lInstance: app.GetName()},
			"ports": []any{M{"name": "http", "protocol": "TCP", "port": p, "targetPort": p}}}}
}

func desiredConfigMap(app *unstructured.Unstructured) M {
	c := config(app)
	if c == nil {
		return nil
	}
	return M{"apiVersion": "v1", "kind": "ConfigMap", "metadata": childMeta(app, app.GetName()+"-config"),
		"data": runtime.DeepCopyJSONValue(c)}
}

// subset: want within have (kop_json_subset).
func subset(want, have any) bool {
	if want == nil {
		return true
	}
	switch w := want.(type) {
	case M:
		h, ok := have.(M)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, have)
	}
}

func meta(o M) M { m, _ := o["metadata"].(M); return m }

func controllerRef(o M) M {
	refs, _ := meta(o)["ownerReferences"].([]any)
	for _, r := range refs {
		if m, ok := r.(M); ok && m["controller"] == true {
			return m
		}
	}
	return nil
}

func upToDate(existing, desired M) bool {
	dmd, emd := meta(desired), meta(existing)
	if !subset(dmd["labels"], emd["labels"]) || !subset(dmd["annotations"], emd["annotations"]) {
		return false
	}
	if !reflect.DeepEqual(controllerRef(desired), controllerRef(existing)) {
		return false
	}
	if !subset(desired["spec"], existing["spec"]) {
		return false
	}
	if d, ok := desired["data"]; ok && !reflect.DeepEqual(d, existing["data"]) {
		return false
	}
	return true
}

func merge(existing, desired M) M {
	m := runtime.DeepCopyJSON(existing)
	md := meta(m)
	if md == nil {
		md = M{}
		m["metadata"] = md
	}
	for _, k := range []string{"labels", "annotations"} {
		if src, ok := meta(desired)[k].(M); ok {
			dst, ok := md[k].(M)
			if !ok {
				dst = M{}
				md[k] = dst
			}
			for kk, v := range src {
				dst[kk] = runtime.DeepCopyJSONValue(v)
			}
		}
	}
	if ref := controllerRef(desired); ref != nil {
		var keep []any
		refs, _ := md["ownerReferences"].([]any)
		for _, r := range refs {
			rm, _ := r.(M)
			if rm["controller"] == true || rm["uid"] == ref["uid"] {
				continue
			}
			keep = append(keep, r)
		}
		md["ownerReferences"] = append(keep, runtime.DeepCopyJSONValue(ref))
	}
	if want, ok := desired["spec"].(M); ok {
		have, ok := m["spec"].(M)
		if !ok {
			m["spec"] = runtime.DeepCopyJSONValue(want)
		} else {
			for k, v := range want {
				have[k] = runtime.DeepCopyJSONValue(v)
			}
		}
	}
	if want, ok := desired["data"].(M); ok {
		m["data"] = runtime.DeepCopyJSONValue(want)
	}
	return m
}

func owns(app *unstructured.Unstructured, child M) bool {
	ref := controllerRef(child)
	if ref == nil || app.GetUID() == "" {
		return false
	}
	av, _ := ref["apiVersion"].(string)
	return len(av) > len(group) && av[:len(group)+1] == group+"/" && ref["kind"] == "App" &&
		ref["uid"] == string(app.GetUID())
}

type childKind struct {
	kind    string
	newObj  func() client.Object
	desired func(*unstructured.Unstructured) M
	suffix  string
}

var kinds = []childKind{
	{"Deployment", func() client.Object { return &appsv1.Deployment{} }, desiredDeployment, ""},
	{"Service", func() client.Object { return &corev1.Service{} }, desiredService, ""},
	{"ConfigMap", func() client.Object { return &corev1.ConfigMap{} }, desiredConfigMap, "-config"},
}

func toMap(o client.Object) (M, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
}

func fromMap(m M, o client.Object) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, o)
}

// syncChild mirrors sync_child of cmd/kcr-operator/app/reconciler.c.
func (r *reconciler) syncChild(ctx context.Context, app *unstructured.Unstructured, k childKind) (M, string, error) {
	ns, name := app.GetNamespace(), app.GetName()+k.suffix
	desired := k.desired(app)
	obj := k.newObj()
	var existing M
	err := r.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, "", err
	}
	if err == nil {
		if existing, err = toMap(obj); err != nil {
			return nil, "", err
		}
	}
	if desired == nil {
		if existing != nil && owns(app, existing) {
			if err := r.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return nil, "", err
			}
		}
		return nil, "", nil
	}
	if existing == nil {
		nobj := k.newObj()
		if err := fromMap(desired, nobj); err != nil {
			return nil, "", err
		}
		err := r.c.Create(ctx, nobj)
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("created " + k.kind + " " + ns + "/" + name)
			r.rec.Eventf(app, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s %s/%s", k.kind, ns, name)
			m, err := toMap(nobj)
			return m, "", err
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, "", err
		}
		dobj := k.newObj()
		if err := r.direct.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, dobj); err != nil {
			return nil, "", err
		}
		dobj.SetManagedFields(nil)
		if existing, err = toMap(dobj); err != nil {
			return nil, "", err
		}
	}
	if !owns(app, existing) {
		return nil, fmt.Sprintf("%s %s/%s exists and is not controlled by this App", k.kind, ns, name), nil
	}
	if upToDate(existing, desired) {
		return existing, "", nil
	}
	nobj := k.newObj()
	if err := fromMap(merge(existing, desired), nobj); err != nil {
		return nil, "", err
	}
	if err := r.c.Update(ctx, nobj); err != nil {
		return nil, "", err
	}
	ctrl.LoggerFrom(ctx).Info("updated " + k.kind + " " + ns + "/" + name)
	r.rec.Eventf(app, nil, corev1.EventTypeNormal, "Updated", "Update", "Updated %s %s/%s", k.kind, ns, name)
	m, err := toMap(nobj)
	return m, "", err
}

func (r *reconciler) syncDirectory(ctx context.Context, app *unstructured.Unstructured, remove bool) error {
	key := app.GetNamespace() + "." + app.GetName()
	url := ""
	if p := port(app); p != 0 {
		url = fmt.Sprintf("http://%s.%s.svc:%d", app.GetName(), app.GetNamespace(), p)
	}
	remove = remove || url == "" || app.GetDeletionTimestamp() != nil
	dir := &corev1.ConfigMap{}
	err := r.direct.Get(ctx, types.NamespacedName{Namespace: r.dirNS, Name: directory}, dir)
	if apierrors.IsNotFound(err) {
		if remove {
			return nil
		}
		dir = &corev1.ConfigMap{}
		dir.Namespace, dir.Name = r.dirNS, directory
		dir.Labels = map[string]string{lManagedBy: managedBy}
		dir.Data = map[string]string{key: url}
		return r.c.Create(ctx, dir)
	}
	if err != nil {
		return err
	}
	dir.ManagedFields = nil
	cur, has := dir.Data[key]
	if remove {
		if !has {
			return nil
		}
		delete(dir.Data, key)
	} else {
		if has && cur == url {
			return nil
		}
		if dir.Data == nil {
			dir.Data = map[string]string{}
		}
		dir.Data[key] = url
	}
	return r.c.Update(ctx, dir)
}

func intAt(o M, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(o, path...)
	return v
}

func condFind(conds []any, t string) M {
	for _, c := range conds {
		if m, ok := c.(M); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

type verdict struct{ status, reason, message string }

// status mirrors kop_app_status.
func appStatus(app *unstructured.Unstructured, dep M, degReason, degMsg string, now time.Time) M {
	want := replicas(app)
	var av, pr, dg verdict
	ready, available := intAt(dep, "status", "readyReplicas"), intAt(dep, "status", "availableReplicas")
	updated, reps := intAt(dep, "status", "updatedReplicas"), intAt(dep, "status", "replicas")
	dconds, _, _ := unstructured.NestedSlice(dep, "status", "conditions")
	dav, dprog := condFind(dconds, "Available"), condFind(dconds, "Progressing")
	stuck := dprog != nil && dprog["reason"] == "ProgressDeadlineExceeded"
	observed := dep != nil && intAt(dep, "status", "observedGeneration") >= intAt(dep, "metadata", "generation")
	switch {
	case want == 0:
		av = verdict{"True", "ScaledToZero", "spec.replicas is 0"}
	case dep == nil:
		av = verdict{"False", "DeploymentMissing", "the Deployment does not exist yet"}
	case ready > 0 && ((dav != nil && dav["status"] == "True") || (dav == nil && available >= want)):
		av = verdict{"True", "MinimumReplicasAvailable", fmt.Sprintf("%d/%d replicas ready", ready, want)}
	default:
		av = verdict{"False", "ReplicasUnavailable", fmt.Sprintf("%d/%d replicas ready", ready, want)}
	}
	switch {
	case degReason != "":
		pr = verdict{"False", degReason, "reconciling failed: see Degraded"}
	case dep == nil:
		pr = verdict{"True", "Creating", "creating the Deployment"}
	case stuck:
		pr = verdict{"False", "ProgressDeadlineExceeded", "the Deployment's rollout is stuck"}
	case !observed || updated < want || reps > updated || available < want:
		pr = verdict{"True", "RollingOut", fmt.Sprintf("%d/%d replicas updated, %d available", updated, want, available)}
	default:
		pr = verdict{"False", "RolloutComplete", fmt.Sprintf("%d replicas up to date", want)}
	}
	switch {
	case degReason != "":
		dg = verdict{"True", degReason, degMsg}
	case stuck:
		m, _ := dprog["message"].(string)
		dg = verdict{"True", "ProgressDeadlineExceeded", m}
	default:
		dg = verdict{"False", "ReconcileSucceeded", "all children are as the spec says"}
	}
	old, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	conds := runtime.DeepCopyJSONValue(any(old))
	cl, _ := conds.([]any)
	gen := app.GetGeneration()
	ts := now.UTC().Format(time.RFC3339)
	set := func(t string, v verdict) {
		cur := condFind(cl, t)
		if cur != nil && cur["status"] == v.status && cur["reason"] == v.reason && cur["message"] == v.message &&
			cur["observedGeneration"] == gen && cur["lastTransitionTime"] != nil {
			return
		}
		ltt := any(ts)
		if cur != nil && cur["status"] == v.status && cur["lastTransitionTime"] != nil {
			ltt = cur["lastTransitionTime"]
		}
		next := M{"type": t, "status": v.status, "reason": v.reason, "message": v.message,
			"observedGeneration": gen, "lastTransitionTime": ltt}
		for i, c := range cl {
			if c.(M)["type"] == t {
				cl[i] = next
				return
			}
		}
		cl = append(cl, next)
	}
	set("Available", av)
	set("Progressing", pr)
	set("Degraded", dg)
	st := M{"observedGeneration": gen, "replicas": reps, "readyReplicas": ready,
		"selector": lName + "=" + app.GetName() + "," + lInstance + "=" + app.GetName(), "conditions": cl}
	if p := port(app); p != 0 {
		st["url"] = fmt.Sprintf("http://%s.%s.svc:%d", app.GetName(), app.GetNamespace(), p)
	}
	return st
}

func hasFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == finalizer {
			return true
		}
	}
	return false
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(appGVK)
	if err := r.c.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.GetDeletionTimestamp() != nil {
		if hasFinalizer(app) {
			if err := r.syncDirectory(ctx, app, true); err != nil {
				return ctrl.Result{}, err
			}
			fins := app.GetFinalizers()
			ops := []M{{"op": "test", "path": "/metadata/finalizers", "value": fins}}
			for i := len(fins) - 1; i >= 0; i-- {
				if fins[i] == finalizer {
					ops = append(ops, M{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)})
				}
			}
			b, _ := json.Marshal(ops)
			return ctrl.Result{}, r.c.Patch(ctx, app, client.RawPatch(types.JSONPatchType, b))
		}
		return ctrl.Result{}, nil
	}
	if s, _ := spec(app)["image"].(string); s == "" {
		return ctrl.Result{}, nil
	}
	if !hasFinalizer(app) {
		app.SetFinalizers(append(app.GetFinalizers(), finalizer))
		if err := r.c.Update(ctx, app); err != nil {
			return ctrl.Result{}, err
		}
	}
	var dep M
	var conflict string
	var syncErr error
	paused, _ := spec(app)["paused"].(bool)
	if !paused {
		for i, k := range kinds {
			seen, c, err := r.syncChild(ctx, app, k)
			if i == 0 {
				dep = seen
			}
			if c != "" && conflict == "" {
				conflict = c
			}
			if err != nil {
				syncErr = err
				break
			}
		}
		if syncErr == nil {
			syncErr = r.syncDirectory(ctx, app, false)
		}
	} else {
		d := &appsv1.Deployment{}
		if r.c.Get(ctx, req.NamespacedName, d) == nil {
			if m, err := toMap(d); err == nil && owns(app, m) {
				dep = m
			}
		}
	}
	res := ctrl.Result{}
	degReason, degMsg := "", ""
	if conflict != "" {
		degReason, degMsg = "NameConflict", conflict
		r.rec.Eventf(app, nil, corev1.EventTypeWarning, "NameConflict", "Reconcile", "%s; it is left alone", conflict)
		res.RequeueAfter = 15 * time.Second
	} else if syncErr != nil {
		degReason, degMsg = "ReconcileFailed", syncErr.Error()
	}
	st := appStatus(app, dep, degReason, degMsg, time.Now())
	cur, _ := app.Object["status"].(M)
	if cur == nil || !reflect.DeepEqual(normalize(cur), normalize(st)) {
		app.Object["status"] = st
		if err := r.c.Status().Update(ctx, app); err != nil && syncErr == nil {
			syncErr = err
		}
	}
	return res, syncErr
}

// normalize round-trips through JSON so that int and int64 compare equal.
func normalize(m M) any {
	b, _ := json.Marshal(m)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func main() {
	ns := flag.String("namespace", "", "watch this namespace only")
	dirNS := flag.String("directory-namespace", "default", "namespace of the directory ConfigMap")
	proto := flag.Bool("protobuf", false, "protobuf on the wire for built-in kinds (controller-runtime's default); else JSON")
	qps := flag.Float64("qps", -1, "client-side rate limit (<0: none)")
	burst := flag.Int("burst", 30, "client-side burst")
	workers := flag.Int("workers", 1, "MaxConcurrentReconciles")
	fifo := flag.Bool("fifo", false, "a plain FIFO workqueue instead of controller-runtime's default priority queue")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	start := time.Now()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = float32(*qps)
	cfg.Burst = *burst
	if *proto {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	sel := labels.SelectorFromSet(labels.Set{lManagedBy: managedBy})
	co := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Label: sel},
			&corev1.Service{}:    {Label: sel},
			&corev1.ConfigMap{}:  {Label: sel},
		},
	}
	if *ns != "" {
		co.DefaultNamespaces = map[string]cache.Config{*ns: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  co,
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
	r := &reconciler{c: mgr.GetClient(), direct: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("kcr.dev/kcr-operator"),
		dirNS: *dirNS, scheme: scheme}
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(appGVK)
	err = ctrl.NewControllerManagedBy(mgr).
		Named("app").
		For(app, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: *workers, UsePriorityQueue: ptr.To(!*fifo)}).
		Complete(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			fmt.Printf("synced %.3f\n", time.Since(start).Seconds())
		}
	}()
	if err := mgr.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

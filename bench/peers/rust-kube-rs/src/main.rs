// SPDX-License-Identifier: MIT
//
// rust-kube-rs: the App operator of kcr (docs/operator.md, cmd/kcr-operator/app/)
// written with kube-rs (kube + kube-runtime), the benchmark's second peer
// (issue 17, shared BENCH.md), beside the controller-runtime twin
// (bench/peers/go-controller-runtime). Same contract as both:
//
// - Controller for App (kcr.dev/v1alpha1, read as a DynamicObject, as the Go
//   twin reads it unstructured) with the generation predicate; owns Deployment,
//   Service and ConfigMap, whose watches are limited to
//   app.kubernetes.io/managed-by=kcr-operator and to -namespace;
// - managedFields stripped before every store; JSON on the wire (kube-rs has
//   no other encoding); no client-side rate limit (kube-rs has none);
// - the initial lists streamed over WATCH (sendInitialEvents), as client-go's
//   informers do by default; -paged for kube-rs's default paged LISTs;
// - Apps and children read from the reflectors' stores, the directory ConfigMap
//   read uncached (GET) and updated with PUT;
// - the same calls per pass: finalizer by update (PUT), children created or
//   updated (PUT of existing merged with desired) when not a superset of what
//   the App wants, status (PUT /status) only when it changed, one Event per
//   created or updated child through kube-runtime's events.k8s.io/v1 Recorder
//   (which turns repeats into a series PATCH), sent from one background task so
//   the reconcile does not wait for it (as client-go's broadcaster does);
// - removal of the finalizer on deletion is one PATCH (a merge patch carrying
//   the resourceVersion as its precondition, where the Go twin sends a JSON
//   patch with a test op: same call, same optimistic lock).
//
// Flags (Go flag syntax, one or two dashes): -kubeconfig, -namespace,
// -directory-namespace (default "default"), -workers (default 1), -paged;
// -qps/-burst and -protobuf are refused unless they ask for the defaults
// (kube-rs has neither). controller-runtime's -zap-* flags are accepted and
// ignored. It prints "synced <seconds since start>" when its stores are synced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Service};
use k8s_openapi::{NamespaceResourceScope, jiff};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Config as CtrlConfig, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value as V, json};

const GROUP: &str = "kcr.dev";
const VERSION: &str = "v1alpha1";
const FINALIZER: &str = "kcr.dev/directory";
const DIRECTORY: &str = "app-directory";
const L_NAME: &str = "app.kubernetes.io/name";
const L_INSTANCE: &str = "app.kubernetes.io/instance";
const L_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
const MANAGED_BY: &str = "kcr-operator";
const HASH_ANN: &str = "kcr.dev/config-hash";

#[derive(Debug)]
struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        Error(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error(e.to_string())
    }
}

fn log(msg: &str) {
    let ts = jiff::Timestamp::now().as_microsecond() as f64 / 1e6;
    eprintln!(
        "{}",
        json!({"level": "info", "ts": ts, "logger": "app", "msg": msg})
    );
}

// watch_error logs a failed watch or list (the watcher retries with backoff).
fn watch_error(kind: &str, e: &watcher::Error) {
    eprintln!(
        "{}",
        json!({"level": "error", "logger": "watch", "msg": "watch failed",
        "kind": kind, "error": e.to_string()})
    );
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

// ---- the App's spec and its children, as JSON (the Go twin's maps) ----

static NULL: V = V::Null;

fn spec(app: &DynamicObject) -> &V {
    app.data.get("spec").unwrap_or(&NULL)
}

fn port(app: &DynamicObject) -> i64 {
    match spec(app)["port"].as_i64() {
        Some(p) if (1..=65535).contains(&p) => p,
        _ => 0,
    }
}

fn replicas(app: &DynamicObject) -> i64 {
    spec(app)["replicas"].as_i64().unwrap_or(1)
}

fn config(app: &DynamicObject) -> Option<&Map<String, V>> {
    spec(app)["config"].as_object().filter(|c| !c.is_empty())
}

fn ns_of(app: &DynamicObject) -> String {
    app.namespace().unwrap_or_default()
}

fn app_labels(app: &DynamicObject) -> V {
    let n = app.name_any();
    json!({L_NAME: n, L_INSTANCE: n, L_MANAGED_BY: MANAGED_BY})
}

fn owner_ref(app: &DynamicObject) -> V {
    json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "App", "name": app.name_any(),
        "uid": app.uid().unwrap_or_default(), "controller": true, "blockOwnerDeletion": true})
}

fn child_meta(app: &DynamicObject, name: &str) -> V {
    json!({"name": name, "namespace": ns_of(app), "labels": app_labels(app),
        "ownerReferences": [owner_ref(app)]})
}

// config_hash: SHA-256 of the config's compact JSON with sorted keys (serde_json's
// Map is ordered by key), the first 16 hex digits, as kop_app_config_hash.
fn config_hash(app: &DynamicObject) -> String {
    let text = match config(app) {
        Some(c) => serde_json::to_string(c).unwrap_or_default(),
        None => "{}".to_string(),
    };
    let d = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    d.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn desired_deployment(app: &DynamicObject) -> Option<V> {
    let name = app.name_any();
    let s = spec(app);
    let mut container = json!({"name": "app", "image": s["image"]});
    let env: Vec<V> = s["env"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|it| {
                    let n = it["name"].as_str().filter(|n| !n.is_empty())?;
                    let mut x = json!({"name": n});
                    if let Some(v) = it["value"].as_str().filter(|v| !v.is_empty()) {
                        x["value"] = json!(v);
                    }
                    Some(x)
                })
                .collect()
        })
        .unwrap_or_default();
    if !env.is_empty() {
        container["env"] = V::Array(env);
    }
    if let Some(r) = s["resources"].as_object() {
        let mut res = Map::new();
        for k in ["requests", "limits"] {
            if let Some(v) = r.get(k).and_then(V::as_object).filter(|v| !v.is_empty()) {
                res.insert(k.to_string(), V::Object(v.clone()));
            }
        }
        if !res.is_empty() {
            container["resources"] = V::Object(res);
        }
    }
    let p = port(app);
    if p != 0 {
        container["ports"] = json!([{"name": "http", "containerPort": p, "protocol": "TCP"}]);
    }
    let mut tmd = json!({"labels": app_labels(app)});
    let mut pod = json!({});
    if config(app).is_some() {
        container["volumeMounts"] =
            json!([{"name": "config", "mountPath": "/etc/app", "readOnly": true}]);
        tmd["annotations"] = json!({HASH_ANN: config_hash(app)});
        pod["volumes"] =
            json!([{"name": "config", "configMap": {"name": format!("{name}-config")}}]);
    }
    pod["containers"] = json!([container]);
    Some(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": child_meta(app, &name),
        "spec": {"replicas": replicas(app), "selector": {"matchLabels": {L_NAME: name, L_INSTANCE: name}},
            "template": {"metadata": tmd, "spec": pod}}}),
    )
}

fn desired_service(app: &DynamicObject) -> Option<V> {
    let p = port(app);
    if p == 0 {
        return None;
    }
    let name = app.name_any();
    Some(
        json!({"apiVersion": "v1", "kind": "Service", "metadata": child_meta(app, &name),
        "spec": {"type": "ClusterIP", "selector": {L_NAME: name, L_INSTANCE: name},
            "ports": [{"name": "http", "protocol": "TCP", "port": p, "targetPort": p}]}}),
    )
}

fn desired_configmap(app: &DynamicObject) -> Option<V> {
    let c = config(app)?;
    Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": child_meta(app, &format!("{}-config", app.name_any())), "data": c}))
}

// subset: want within have (kop_json_subset).
fn subset(want: &V, have: &V) -> bool {
    match want {
        V::Null => true,
        V::Object(w) => match have {
            V::Object(h) => w.iter().all(|(k, v)| subset(v, h.get(k).unwrap_or(&NULL))),
            _ => false,
        },
        V::Array(w) => match have {
            V::Array(h) => h.len() == w.len() && w.iter().zip(h).all(|(a, b)| subset(a, b)),
            _ => false,
        },
        _ => want == have,
    }
}

fn controller_ref(o: &V) -> Option<&V> {
    o["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == V::Bool(true))
}

fn up_to_date(existing: &V, desired: &V) -> bool {
    let (dmd, emd) = (&desired["metadata"], &existing["metadata"]);
    subset(&dmd["labels"], &emd["labels"])
        && subset(&dmd["annotations"], &emd["annotations"])
        && controller_ref(desired) == controller_ref(existing)
        && subset(&desired["spec"], &existing["spec"])
        && desired
            .get("data")
            .is_none_or(|d| Some(d) == existing.get("data"))
}

fn merge(existing: &V, desired: &V) -> V {
    let mut m = existing.clone();
    if !m["metadata"].is_object() {
        m["metadata"] = json!({});
    }
    for k in ["labels", "annotations"] {
        if let Some(src) = desired["metadata"][k].as_object() {
            if !m["metadata"][k].is_object() {
                m["metadata"][k] = json!({});
            }
            let dst = m["metadata"][k].as_object_mut().expect("an object");
            for (kk, v) in src {
                dst.insert(kk.clone(), v.clone());
            }
        }
    }
    if let Some(r) = controller_ref(desired) {
        let mut keep: Vec<V> = m["metadata"]["ownerReferences"]
            .as_array()
            .map(|refs| {
                refs.iter()
                    .filter(|x| x["controller"] != V::Bool(true) && x["uid"] != r["uid"])
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        keep.push(r.clone());
        m["metadata"]["ownerReferences"] = V::Array(keep);
    }
    if let Some(want) = desired["spec"].as_object() {
        match m["spec"].as_object_mut() {
            Some(have) => {
                for (k, v) in want {
                    have.insert(k.clone(), v.clone());
                }
            }
            None => m["spec"] = V::Object(want.clone()),
        }
    }
    if let Some(d) = desired.get("data").filter(|d| d.is_object()) {
        m["data"] = d.clone();
    }
    m
}

fn owns(app: &DynamicObject, child: &V) -> bool {
    let (Some(r), Some(uid)) = (controller_ref(child), app.uid()) else {
        return false;
    };
    r["apiVersion"]
        .as_str()
        .is_some_and(|a| a.starts_with("kcr.dev/"))
        && r["kind"] == "App"
        && r["uid"].as_str() == Some(uid.as_str())
}

// ---- status (kop_app_status) ----

fn int_at(o: Option<&V>, path: &[&str]) -> i64 {
    let mut v = match o {
        Some(v) => v,
        None => return 0,
    };
    for p in path {
        v = &v[*p];
    }
    v.as_i64().unwrap_or(0)
}

fn cond_find<'a>(conds: &'a [V], t: &str) -> Option<&'a V> {
    conds.iter().find(|c| c["type"] == t)
}

fn verdict(status: &str, reason: &str, message: String) -> (String, String, String) {
    (status.to_string(), reason.to_string(), message)
}

fn app_status(app: &DynamicObject, dep: Option<&V>, deg: Option<(&str, &str)>) -> V {
    let want = replicas(app);
    let ready = int_at(dep, &["status", "readyReplicas"]);
    let available = int_at(dep, &["status", "availableReplicas"]);
    let updated = int_at(dep, &["status", "updatedReplicas"]);
    let reps = int_at(dep, &["status", "replicas"]);
    let empty = Vec::new();
    let dconds = dep
        .and_then(|d| d["status"]["conditions"].as_array())
        .unwrap_or(&empty);
    let dav = cond_find(dconds, "Available");
    let dprog = cond_find(dconds, "Progressing");
    let stuck = dprog.is_some_and(|p| p["reason"] == "ProgressDeadlineExceeded");
    let observed = dep.is_some()
        && int_at(dep, &["status", "observedGeneration"])
            >= int_at(dep, &["metadata", "generation"]);
    let av = if want == 0 {
        verdict("True", "ScaledToZero", "spec.replicas is 0".into())
    } else if dep.is_none() {
        verdict(
            "False",
            "DeploymentMissing",
            "the Deployment does not exist yet".into(),
        )
    } else if ready > 0
        && (dav.is_some_and(|a| a["status"] == "True") || (dav.is_none() && available >= want))
    {
        verdict(
            "True",
            "MinimumReplicasAvailable",
            format!("{ready}/{want} replicas ready"),
        )
    } else {
        verdict(
            "False",
            "ReplicasUnavailable",
            format!("{ready}/{want} replicas ready"),
        )
    };
    let pr = if let Some((reason, _)) = deg {
        verdict("False", reason, "reconciling failed: see Degraded".into())
    } else if dep.is_none() {
        verdict("True", "Creating", "creating the Deployment".into())
    } else if stuck {
        verdict(
            "False",
            "ProgressDeadlineExceeded",
            "the Deployment's rollout is stuck".into(),
        )
    } else if !observed || updated < want || reps > updated || available < want {
        verdict(
            "True",
            "RollingOut",
            format!("{updated}/{want} replicas updated, {available} available"),
        )
    } else {
        verdict(
            "False",
            "RolloutComplete",
            format!("{want} replicas up to date"),
        )
    };
    let dg = if let Some((reason, msg)) = deg {
        verdict("True", reason, msg.to_string())
    } else if stuck {
        let m = dprog.and_then(|p| p["message"].as_str()).unwrap_or("");
        verdict("True", "ProgressDeadlineExceeded", m.to_string())
    } else {
        verdict(
            "False",
            "ReconcileSucceeded",
            "all children are as the spec says".into(),
        )
    };
    let mut cl: Vec<V> = app.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let gen_ = app.meta().generation.unwrap_or(0);
    let ts = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let mut set = |t: &str, (status, reason, message): (String, String, String)| {
        let cur = cond_find(&cl, t);
        if let Some(c) = cur
            && c["status"] == *status
            && c["reason"] == *reason
            && c["message"] == *message
            && c["observedGeneration"].as_i64() == Some(gen_)
            && !c["lastTransitionTime"].is_null()
        {
            return;
        }
        let ltt = match cur {
            Some(c) if c["status"] == *status && !c["lastTransitionTime"].is_null() => {
                c["lastTransitionTime"].clone()
            }
            _ => json!(ts),
        };
        let next = json!({"type": t, "status": status, "reason": reason, "message": message,
            "observedGeneration": gen_, "lastTransitionTime": ltt});
        match cl.iter_mut().find(|c| c["type"] == t) {
            Some(c) => *c = next,
            None => cl.push(next),
        }
    };
    set("Available", av);
    set("Progressing", pr);
    set("Degraded", dg);
    // Paused as kop_app_status has it (the Go twin leaves this condition out).
    if spec(app)["paused"].as_bool().unwrap_or(false) {
        set(
            "Paused",
            verdict(
                "True",
                "Paused",
                "spec.paused is true: the children are not changed".into(),
            ),
        );
    } else {
        cl.retain(|c| c["type"] != "Paused");
    }
    let name = app.name_any();
    let mut st = json!({"observedGeneration": gen_, "replicas": reps, "readyReplicas": ready,
        "selector": format!("{L_NAME}={name},{L_INSTANCE}={name}"), "conditions": cl});
    let p = port(app);
    if p != 0 {
        st["url"] = json!(format!("http://{name}.{}.svc:{p}", ns_of(app)));
    }
    st
}

// ---- the reconciler ----

struct Ctx {
    client: Client,
    ar: ApiResource,
    deployments: Store<Deployment>,
    services: Store<Service>,
    configmaps: Store<ConfigMap>,
    dir_ns: String,
    events: tokio::sync::mpsc::UnboundedSender<(Event, ObjectReference)>,
    failures: Mutex<HashMap<String, u32>>,
}

impl Ctx {
    fn event(
        &self,
        app: &DynamicObject,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let ev = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: action.into(),
            secondary: None,
        };
        let _ = self.events.send((ev, app.object_ref(&self.ar)));
    }
}

trait Child:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<T> Child for T where
    T: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

// sync_child mirrors sync_child of cmd/kcr-operator/app/reconciler.c: returns
// the child as it is now (None when absent) and a name conflict, if any.
async fn sync_child<K: Child>(
    ctx: &Ctx,
    app: &DynamicObject,
    store: &Store<K>,
    kind: &str,
    name: String,
    desired: Option<V>,
) -> Result<(Option<V>, Option<String>), Error> {
    let ns = ns_of(app);
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let mut existing = match store.get(&ObjectRef::new(&name).within(&ns)) {
        Some(o) => Some(serde_json::to_value(&*o)?),
        None => None,
    };
    let Some(desired) = desired else {
        if let Some(e) = &existing
            && owns(app, e)
        {
            match api.delete(&name, &DeleteParams::default()).await {
                Err(e) if !is_status(&e, 404) => return Err(e.into()),
                _ => {}
            }
        }
        return Ok((None, None));
    };
    if existing.is_none() {
        let obj: K = serde_json::from_value(desired.clone())?;
        match api.create(&PostParams::default(), &obj).await {
            Ok(created) => {
                log(&format!("created {kind} {ns}/{name}"));
                ctx.event(
                    app,
                    EventType::Normal,
                    "Created",
                    "Create",
                    format!("Created {kind} {ns}/{name}"),
                );
                return Ok((Some(serde_json::to_value(&created)?), None));
            }
            Err(e) if is_status(&e, 409) => {
                let mut o = api.get(&name).await?;
                o.meta_mut().managed_fields = None;
                existing = Some(serde_json::to_value(&o)?);
            }
            Err(e) => return Err(e.into()),
        }
    }
    let existing = existing.expect("read or created");
    if !owns(app, &existing) {
        return Ok((
            None,
            Some(format!(
                "{kind} {ns}/{name} exists and is not controlled by this App"
            )),
        ));
    }
    if up_to_date(&existing, &desired) {
        return Ok((Some(existing), None));
    }
    let obj: K = serde_json::from_value(merge(&existing, &desired))?;
    let updated = api.replace(&name, &PostParams::default(), &obj).await?;
    log(&format!("updated {kind} {ns}/{name}"));
    ctx.event(
        app,
        EventType::Normal,
        "Updated",
        "Update",
        format!("Updated {kind} {ns}/{name}"),
    );
    Ok((Some(serde_json::to_value(&updated)?), None))
}

async fn sync_directory(ctx: &Ctx, app: &DynamicObject, remove: bool) -> Result<(), Error> {
    let key = format!("{}.{}", ns_of(app), app.name_any());
    let p = port(app);
    let url = if p != 0 {
        format!("http://{}.{}.svc:{p}", app.name_any(), ns_of(app))
    } else {
        String::new()
    };
    let remove = remove || url.is_empty() || app.meta().deletion_timestamp.is_some();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.dir_ns);
    let mut dir = match api.get(DIRECTORY).await {
        Ok(d) => d,
        Err(e) if is_status(&e, 404) => {
            if remove {
                return Ok(());
            }
            let dir: ConfigMap = serde_json::from_value(json!({"metadata": {"name": DIRECTORY,
                "namespace": ctx.dir_ns, "labels": {L_MANAGED_BY: MANAGED_BY}}, "data": {key: url}}))?;
            api.create(&PostParams::default(), &dir).await?;
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    dir.metadata.managed_fields = None;
    let data = dir.data.get_or_insert_with(Default::default);
    if remove {
        if data.remove(&key).is_none() {
            return Ok(());
        }
    } else {
        if data.get(&key) == Some(&url) {
            return Ok(());
        }
        data.insert(key, url);
    }
    api.replace(DIRECTORY, &PostParams::default(), &dir).await?;
    Ok(())
}

fn has_finalizer(app: &DynamicObject) -> bool {
    app.finalizers().iter().any(|f| f == FINALIZER)
}

async fn reconcile(app: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let ns = ns_of(&app);
    let name = app.name_any();
    let key = format!("{ns}/{name}");
    let res = reconcile_app(&app, &ctx).await;
    if res.is_ok() {
        ctx.failures.lock().expect("not poisoned").remove(&key);
    }
    res
}

async fn reconcile_app(app0: &DynamicObject, ctx: &Ctx) -> Result<Action, Error> {
    let ns = ns_of(app0);
    let name = app0.name_any();
    let apps: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ns, &ctx.ar);
    if app0.meta().deletion_timestamp.is_some() {
        if has_finalizer(app0) {
            sync_directory(ctx, app0, true).await?;
            let keep: Vec<&String> = app0
                .finalizers()
                .iter()
                .filter(|f| *f != FINALIZER)
                .collect();
            let patch = json!({"metadata": {"finalizers": keep,
                "resourceVersion": app0.resource_version()}});
            apps.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        return Ok(Action::await_change());
    }
    if spec(app0)["image"].as_str().unwrap_or("").is_empty() {
        return Ok(Action::await_change());
    }
    let mut owned;
    let mut app = app0;
    if !has_finalizer(app) {
        owned = app.clone();
        owned.finalizers_mut().push(FINALIZER.to_string());
        owned = apps.replace(&name, &PostParams::default(), &owned).await?;
        app = &owned;
    }
    let mut dep: Option<V> = None;
    let mut conflict: Option<String> = None;
    let mut sync_err: Option<Error> = None;
    let paused = spec(app)["paused"].as_bool().unwrap_or(false);
    if !paused {
        // Deployment, Service, ConfigMap, then the directory; the first error stops the pass.
        match sync_child(
            ctx,
            app,
            &ctx.deployments,
            "Deployment",
            name.clone(),
            desired_deployment(app),
        )
        .await
        {
            Ok((seen, c)) => (dep, conflict) = (seen, c),
            Err(e) => sync_err = Some(e),
        }
        if sync_err.is_none() {
            match sync_child(
                ctx,
                app,
                &ctx.services,
                "Service",
                name.clone(),
                desired_service(app),
            )
            .await
            {
                Ok((_, c)) => conflict = conflict.or(c),
                Err(e) => sync_err = Some(e),
            }
        }
        if sync_err.is_none() {
            let cm_name = format!("{name}-config");
            match sync_child(
                ctx,
                app,
                &ctx.configmaps,
                "ConfigMap",
                cm_name,
                desired_configmap(app),
            )
            .await
            {
                Ok((_, c)) => conflict = conflict.or(c),
                Err(e) => sync_err = Some(e),
            }
        }
        if sync_err.is_none() {
            sync_err = sync_directory(ctx, app, false).await.err();
        }
    } else if let Some(d) = ctx.deployments.get(&ObjectRef::new(&name).within(&ns)) {
        let d = serde_json::to_value(&*d)?;
        if owns(app, &d) {
            dep = Some(d);
        }
    }
    let mut action = Action::await_change();
    let deg = if let Some(c) = &conflict {
        ctx.event(
            app,
            EventType::Warning,
            "NameConflict",
            "Reconcile",
            format!("{c}; it is left alone"),
        );
        action = Action::requeue(Duration::from_secs(15));
        Some(("NameConflict", c.as_str()))
    } else {
        sync_err.as_ref().map(|e| ("ReconcileFailed", e.0.as_str()))
    };
    let st = app_status(app, dep.as_ref(), deg);
    if app.data.get("status") != Some(&st) {
        let mut next = app.clone();
        next.data["status"] = st;
        if let Err(e) = apps
            .replace_status(&name, &PostParams::default(), &next)
            .await
            && sync_err.is_none()
        {
            sync_err = Some(e.into());
        }
    }
    match sync_err {
        Some(e) => Err(e),
        None => Ok(action),
    }
}

// error_policy: per-App exponential backoff from 5 ms to 1000 s, as
// controller-runtime's default item rate limiter.
fn error_policy(app: Arc<DynamicObject>, err: &Error, ctx: Arc<Ctx>) -> Action {
    let key = format!("{}/{}", ns_of(&app), app.name_any());
    let mut f = ctx.failures.lock().expect("not poisoned");
    let n = f.entry(key.clone()).or_insert(0);
    let delay = Duration::from_millis(5).saturating_mul(1u32 << (*n).min(20));
    *n += 1;
    eprintln!(
        "{}",
        json!({"level": "error", "logger": "app", "msg": "Reconciler error", "App": key, "error": err.0})
    );
    Action::requeue(delay.min(Duration::from_secs(1000)))
}

// ---- flags and main ----

struct Flags {
    kubeconfig: String,
    namespace: String,
    dir_ns: String,
    workers: u16,
    paged: bool,
}

fn usage(msg: &str) -> ! {
    eprintln!("rust-kube-rs: {msg}");
    eprintln!(
        "usage: rust-kube-rs [-kubeconfig FILE] [-namespace NS] [-directory-namespace NS] [-workers N] [-paged]"
    );
    std::process::exit(2);
}

fn parse_flags() -> Flags {
    let mut f = Flags {
        kubeconfig: std::env::var("KUBECONFIG").unwrap_or_default(),
        namespace: String::new(),
        dir_ns: "default".to_string(),
        workers: 1,
        paged: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            usage(&format!("unexpected argument {arg}"));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let boolean = |v: Option<String>| v.map(|v| v == "true" || v == "1").unwrap_or(true);
        match name.as_str() {
            "paged" => {
                f.paged = boolean(inline);
                continue;
            }
            "protobuf" => {
                if boolean(inline) {
                    usage("-protobuf: kube-rs speaks JSON only");
                }
                continue;
            }
            "zap-devel" => continue,
            _ => {}
        }
        let value = inline
            .or_else(|| args.next())
            .unwrap_or_else(|| usage(&format!("flag needs an argument: -{name}")));
        match name.as_str() {
            "kubeconfig" => f.kubeconfig = value,
            "namespace" => f.namespace = value,
            "directory-namespace" => f.dir_ns = value,
            "workers" => {
                f.workers = value
                    .parse()
                    .ok()
                    .filter(|w| *w > 0)
                    .unwrap_or_else(|| usage("bad -workers"))
            }
            "qps" => {
                if value.parse::<f64>().map(|q| q >= 0.0).unwrap_or(true) {
                    usage("-qps: kube-rs has no client-side rate limiter");
                }
            }
            "burst" => {}
            n if n.starts_with("zap-") => {}
            _ => usage(&format!("flag provided but not defined: -{name}")),
        }
    }
    f
}

async fn client(kubeconfig: &str) -> Result<Client, Box<dyn std::error::Error>> {
    let config = if kubeconfig.is_empty() {
        kube::Config::infer().await?
    } else {
        let kc = Kubeconfig::read_from(kubeconfig)?;
        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
    };
    Ok(Client::try_from(config)?)
}

fn api_for<K: Child>(client: &Client, ns: &str) -> Api<K> {
    if ns.is_empty() {
        Api::all(client.clone())
    } else {
        Api::namespaced(client.clone(), ns)
    }
}

#[tokio::main]
async fn main() {
    let flags = parse_flags();
    let start = Instant::now();
    let client = match client(&flags.kubeconfig).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kubeconfig: {e}");
            std::process::exit(1);
        }
    };
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, "App"), "apps");
    let mut wc = watcher::Config::default();
    if !flags.paged {
        wc = wc.streaming_lists();
    }
    let child_wc = wc.clone().labels(&format!("{L_MANAGED_BY}={MANAGED_BY}"));

    let app_api: Api<DynamicObject> = if flags.namespace.is_empty() {
        Api::all_with(client.clone(), &ar)
    } else {
        Api::namespaced_with(client.clone(), &flags.namespace, &ar)
    };
    let app_writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
    let app_store = app_writer.as_reader();
    // The App store's readiness is taken from the stream, not from a second
    // Store::wait_until_ready: kube-runtime's DelayedInit wakes only the last of
    // several concurrent waiters (a oneshot keeps one waker), so waiting on it
    // beside the controller's own wait leaves one of the two asleep.
    let (app_synced_tx, app_synced_rx) = tokio::sync::oneshot::channel::<()>();
    let mut app_synced_tx = Some(app_synced_tx);
    let apps = watcher(app_api, wc)
        .default_backoff()
        .modify(|o: &mut DynamicObject| o.metadata.managed_fields = None)
        .inspect_err(|e| watch_error("App", e))
        .reflect(app_writer)
        .inspect_ok(move |ev| {
            if matches!(ev, watcher::Event::InitDone)
                && let Some(tx) = app_synced_tx.take()
            {
                let _ = tx.send(());
            }
        })
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());

    let (deployments, dw) = reflector::store::<Deployment>();
    let dep_stream = watcher(
        api_for::<Deployment>(&client, &flags.namespace),
        child_wc.clone(),
    )
    .default_backoff()
    .modify(|o: &mut Deployment| o.metadata.managed_fields = None)
    .inspect_err(|e| watch_error("Deployment", e))
    .reflect(dw)
    .touched_objects();
    let (services, sw) = reflector::store::<Service>();
    let svc_stream = watcher(
        api_for::<Service>(&client, &flags.namespace),
        child_wc.clone(),
    )
    .default_backoff()
    .modify(|o: &mut Service| o.metadata.managed_fields = None)
    .inspect_err(|e| watch_error("Service", e))
    .reflect(sw)
    .touched_objects();
    let (configmaps, cw) = reflector::store::<ConfigMap>();
    let cm_stream = watcher(api_for::<ConfigMap>(&client, &flags.namespace), child_wc)
        .default_backoff()
        .modify(|o: &mut ConfigMap| o.metadata.managed_fields = None)
        .inspect_err(|e| watch_error("ConfigMap", e))
        .reflect(cw)
        .touched_objects();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Event, ObjectReference)>();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "kcr.dev/kcr-operator".into(),
            instance: None,
        },
    );
    tokio::spawn(async move {
        while let Some((ev, reference)) = rx.recv().await {
            if let Err(e) = recorder.publish(&ev, &reference).await {
                eprintln!(
                    "{}",
                    json!({"level": "error", "msg": "event", "error": e.to_string()})
                );
            }
        }
    });

    let ctx = Arc::new(Ctx {
        client: client.clone(),
        ar: ar.clone(),
        deployments: deployments.clone(),
        services: services.clone(),
        configmaps: configmaps.clone(),
        dir_ns: flags.dir_ns.clone(),
        events: tx,
        failures: Mutex::new(HashMap::new()),
    });

    let synced_stores = (deployments, services, configmaps);
    tokio::spawn(async move {
        let (d, s, c) = synced_stores;
        let ok = app_synced_rx.await.is_ok()
            && d.wait_until_ready().await.is_ok()
            && s.wait_until_ready().await.is_ok()
            && c.wait_until_ready().await.is_ok();
        if ok {
            println!("synced {:.3}", start.elapsed().as_secs_f64());
        }
    });

    Controller::for_stream_with(apps, app_store, ar)
        .owns_stream(dep_stream)
        .owns_stream(svc_stream)
        .owns_stream(cm_stream)
        .with_config(CtrlConfig::default().concurrency(flags.workers))
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|_| std::future::ready(()))
        .await;
}

// SPDX-License-Identifier: MIT
//
// rust-cache-sync: the kube-rs peer of bench/cache_sync (issue 17), beside
// the client-go one (bench/peers/go-cache-sync). A kube-rs reflector (watcher
// + store) on the ConfigMaps (or, with -resource pods, the Pods) of one
// namespace, JSON on the wire (kube-rs has no other), managedFields dropped
// before the store, as the Go peer's transform does. The initial list is
// streamed over WATCH (sendInitialEvents), as client-go's informer does by
// default; -paged uses paged LISTs (kube-rs's default, 500 a page) instead.
//
// Usage: rust-cache-sync -kubeconfig FILE -namespace NS [-resource configmaps|pods]
//                        [-settle SECONDS] [-paged]
// (Go flag syntax: -flag value, -flag=value, one or two dashes.)
//
// It prints the Go peer's line with impl=kube-rs: time start -> synced, CPU,
// VmRSS and VmHWM once synced and after the settle time, objects cached, and
// lists= (the watcher's Init events: 1, plus one per relist).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, Client, Config, Resource};

fn status(field: &str) -> String {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
            return rest.trim().trim_end_matches("kB").trim().to_string();
        }
    }
    "?".to_string()
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

struct Flags {
    kubeconfig: String,
    namespace: String,
    resource: String,
    settle: f64,
    paged: bool,
}

fn usage(msg: &str) -> ! {
    eprintln!("rust-cache-sync: {msg}");
    eprintln!(
        "usage: rust-cache-sync -kubeconfig FILE -namespace NS [-resource configmaps|pods] \
         [-settle SECONDS] [-paged]"
    );
    std::process::exit(2);
}

fn parse_flags() -> Flags {
    let mut f = Flags {
        kubeconfig: std::env::var("KUBECONFIG").unwrap_or_default(),
        namespace: "default".to_string(),
        resource: "configmaps".to_string(),
        settle: 2.0,
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
        if name == "paged" {
            f.paged = inline.map(|v| v == "true" || v == "1").unwrap_or(true);
            continue;
        }
        let value = inline
            .or_else(|| args.next())
            .unwrap_or_else(|| usage(&format!("flag needs an argument: -{name}")));
        match name.as_str() {
            "kubeconfig" => f.kubeconfig = value,
            "namespace" => f.namespace = value,
            "resource" if value == "configmaps" || value == "pods" => f.resource = value,
            "resource" => usage("-resource is configmaps or pods"),
            "settle" => f.settle = value.parse().unwrap_or_else(|_| usage("bad -settle")),
            _ => usage(&format!("flag provided but not defined: -{name}")),
        }
    }
    f
}

async fn client(kubeconfig: &str) -> Result<Client, Box<dyn std::error::Error>> {
    let config = if kubeconfig.is_empty() {
        Config::infer().await?
    } else {
        let kc = Kubeconfig::read_from(kubeconfig)?;
        Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
    };
    Ok(Client::try_from(config)?)
}

// Objects is the store of the one kind this run caches.
enum Objects {
    ConfigMaps(Store<ConfigMap>),
    Pods(Store<Pod>),
}

impl Objects {
    fn len(&self) -> usize {
        match self {
            Objects::ConfigMaps(s) => s.state().len(),
            Objects::Pods(s) => s.state().len(),
        }
    }
}

// reflect starts a reflector on K in flags.namespace, managedFields dropped
// before the store, and returns its store and the task that drives it; lists
// counts the lists the watcher started (its Init events).
fn reflect<K>(
    client: Client,
    flags: &Flags,
    lists: Arc<AtomicU64>,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let api: Api<K> = Api::namespaced(client, &flags.namespace);
    let mut wc = watcher::Config::default();
    if !flags.paged {
        wc = wc.streaming_lists();
    }
    let (store, writer) = reflector::store();
    let stream = watcher(api, wc)
        .default_backoff()
        .modify(|o: &mut K| o.meta_mut().managed_fields = None)
        .reflect(writer);
    let driver = tokio::spawn(stream.for_each(move |ev| {
        if let Ok(watcher::Event::Init) = ev {
            lists.fetch_add(1, Ordering::Relaxed);
        }
        std::future::ready(())
    }));
    (store, driver)
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
    let lists = Arc::new(AtomicU64::new(0));
    let (store, driver) = if flags.resource == "pods" {
        let (s, d) = reflect::<Pod>(client, &flags, lists.clone());
        (Objects::Pods(s), d)
    } else {
        let (s, d) = reflect::<ConfigMap>(client, &flags, lists.clone());
        (Objects::ConfigMaps(s), d)
    };
    let ready = match &store {
        Objects::ConfigMaps(s) => s.wait_until_ready().await.is_ok(),
        Objects::Pods(s) => s.wait_until_ready().await.is_ok(),
    };
    if !ready {
        eprintln!("not synced");
        std::process::exit(1);
    }
    let synced = start.elapsed();
    let cpu = cpu_seconds();
    let (rss, hwm) = (status("VmRSS"), status("VmHWM"));
    tokio::time::sleep(Duration::from_secs_f64(flags.settle)).await;
    println!(
        "impl=kube-rs objects={} sync_s={:.3} cpu_s={:.3} rss_synced_kb={} hwm_synced_kb={} \
         rss_kb={} hwm_kb={} lists={}",
        store.len(),
        synced.as_secs_f64(),
        cpu,
        rss,
        hwm,
        status("VmRSS"),
        status("VmHWM"),
        lists.load(Ordering::Relaxed)
    );
    driver.abort();
}

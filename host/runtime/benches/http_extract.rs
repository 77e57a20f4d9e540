//! A GET to a loopback server plus extraction of 5 paths from a 100 KB JSON body, through the
//! http component, against the same request made directly with reqwest in the same run.
//! Prints both medians and what the node adds (the target: at most 2 ms).

use pflow_runtime::capabilities::Capability;
use pflow_runtime::capabilities::Grants;
use pflow_runtime::registry::Origin;
use pflow_runtime::sandbox::Execution;
use pflow_runtime::Limits;
mod support;

use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

const WARMUP: usize = 50;
const ITERATIONS: usize = 500;

/// About 100 KB of JSON: a list of records, as an API would return.
fn document() -> String {
    let items: Vec<Value> = (0..850)
        .map(|i| {
            json!({
                "id": i,
                "name": format!("item number {i}"),
                "tags": ["alpha", "beta", "gamma"],
                "owner": {"login": format!("user{i}"), "active": i % 2 == 0},
                "score": i as f64 * 1.5
            })
        })
        .collect();
    json!({"total": 850, "page": {"next": "/items?page=2", "size": 850}, "items": items})
        .to_string()
}

/// A minimal keep-alive HTTP/1.1 server that answers every request with `body` in one write.
/// (tiny_http writes headers and body separately without TCP_NODELAY, and the resulting
/// Nagle/delayed-ACK stalls of 40 ms would swamp what this benchmark measures.)
fn serve(body: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("address").port();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let response = response.clone();
            std::thread::spawn(move || answer_each_request(stream, &response));
        }
    });
    port
}

fn answer_each_request(mut stream: TcpStream, response: &[u8]) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    loop {
        // A GET has no body: the request ends at the empty line after its headers.
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {}
            }
        }
        if stream.write_all(response).is_err() {
            return;
        }
    }
}

fn main() {
    let body = document();
    let body_len = body.len();
    let port = serve(body);
    let url = format!("http://127.0.0.1:{port}/items");

    // Direct: reqwest on a current-thread runtime, as the host's capability uses it.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let direct = || {
        runtime.block_on(async {
            let response = client.get(&url).send().await.expect("GET");
            let bytes = response.bytes().await.expect("body");
            assert_eq!(bytes.len(), body_len);
        })
    };

    // Through the component.
    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("plugins", "http.wasm", Origin::Builtin);
    let plugin = registry.get("http").expect("the http plugin");
    let (pre, _) = plugin.prepared(&sandbox).unwrap();
    let exec = Execution {
        node_id: "fetch",
        node_type: "http",
        limits: Limits::default(),
        grants: Grants::of([Capability::Http]),
        capabilities: Default::default(),
        dry: None,
        cancel: Default::default(),
    };
    let params: Map<String, Value> = json!({
        "url": url,
        "extract": {
            "total": "$.total",
            "next": "$.page.next",
            "first_name": "$.items[0].name",
            "owner": "$.items[250].owner.login",
            "last_tag": "$.items[849].tags[2]"
        }
    })
    .as_object()
    .cloned()
    .unwrap();
    let through_node = || {
        let outcome = sandbox
            .run(pre, &exec, &params)
            .expect("the http node runs");
        assert_eq!(outcome.outputs["extracted"]["owner"], "user250");
    };

    let (direct, node) = support::interleaved_medians(WARMUP, ITERATIONS, direct, through_node);
    println!(
        "http_extract: GET + extract 5 paths from {} KB of JSON, median over {ITERATIONS}: \
         direct reqwest {:.3} ms, http node {:.3} ms, the node adds {:.3} ms; target <= 2 ms",
        body_len / 1024,
        support::ms(direct),
        support::ms(node),
        support::ms(node.saturating_sub(direct)),
    );
}

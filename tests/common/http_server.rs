//! A real HTTP server on loopback for the tests, with the endpoints they need and a log of
//! every request it received.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use tiny_http::{Header, Response, Server};

pub struct TestServer {
    server: Arc<Server>,
    pub ip: String,
    pub port: u16,
    log: Arc<Mutex<Vec<Value>>>,
}

/// The JSON that `/json` serves.
pub fn user_document() -> Value {
    json!({
        "user": {"name": "Ada", "langs": ["en", "fr"]},
        "items": [{"id": 7, "name": "first"}, {"id": 8, "name": "second"}],
        "total": 2
    })
}

impl TestServer {
    pub fn start() -> Self {
        TestServer::start_on("127.0.0.1")
    }

    /// A server on another loopback address (127.0.0.2, ...): another origin on this machine.
    pub fn start_on(ip: &str) -> Self {
        let server = Arc::new(Server::http(format!("{ip}:0")).expect("bind a loopback port"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (serving, logging) = (server.clone(), log.clone());
        thread::spawn(move || {
            for request in serving.incoming_requests() {
                let logging = logging.clone();
                // Each request on its own thread, so that a slow one blocks nothing else.
                thread::spawn(move || handle(request, port, &logging));
            }
        });
        TestServer {
            server,
            ip: ip.to_string(),
            port,
            log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.ip, self.port)
    }

    /// "METHOD /path" of every request, in order of arrival.
    pub fn requests(&self) -> Vec<String> {
        self.received()
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    r["method"].as_str().unwrap(),
                    r["path"].as_str().unwrap()
                )
            })
            .collect()
    }

    /// Every request as received: `{method, path, headers (names in lower case), body}`.
    pub fn received(&self) -> Vec<Value> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

fn handle(mut request: tiny_http::Request, port: u16, log: &Mutex<Vec<Value>>) {
    let url = request.url().to_string();
    let method = request.method().to_string();
    let path = url.split('?').next().unwrap_or_default().to_string();
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let mut body = String::new();
    let _ = request.as_reader().read_to_string(&mut body);
    let headers: HashMap<String, String> = request
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_ascii_lowercase(),
                h.value.to_string(),
            )
        })
        .collect();
    log.lock()
        .unwrap()
        .push(json!({"method": method, "path": path, "headers": headers, "body": body}));
    let json_header = Header::from_bytes("Content-Type", "application/json").unwrap();
    let json_response = |status: u16, body: Value| {
        Response::from_string(body.to_string())
            .with_status_code(status)
            .with_header(json_header.clone())
    };
    let response = match path.as_str() {
        "/json" => json_response(200, user_document()),
        "/text" => Response::from_string("just text, not JSON"),
        "/big" => Response::from_string("x".repeat(2 << 20)),
        "/slow" => {
            thread::sleep(Duration::from_secs(2));
            json_response(200, json!({"late": true}))
        }
        "/redirect" => Response::from_string("")
            .with_status_code(302)
            .with_header(Header::from_bytes("Location", "/json").unwrap()),
        "/redirect-elsewhere" => Response::from_string("").with_status_code(302).with_header(
            Header::from_bytes("Location", format!("http://localhost:{port}/json")).unwrap(),
        ),
        "/echo" => json_response(
            200,
            json!({"method": method, "url": url, "headers": headers, "body": body}),
        ),
        // `/redirect-to?status=307&url=http://...`: a redirect anywhere, with any 3xx.
        "/redirect-to" => {
            let param = |name: &str| {
                query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
            };
            let status = param("status").and_then(|s| s.parse().ok()).unwrap_or(302);
            let location = param("url").unwrap_or("/json");
            Response::from_string("")
                .with_status_code(status)
                .with_header(Header::from_bytes("Location", location).unwrap())
        }
        _ => match path
            .strip_prefix("/status/")
            .and_then(|c| c.parse::<u16>().ok())
        {
            Some(code) => {
                json_response(code, json!({"error": format!("status {code} on purpose")}))
            }
            None => json_response(404, json!({"error": "no such endpoint"})),
        },
    };
    let _ = request.respond(response);
}

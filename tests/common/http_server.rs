//! A real HTTP server on loopback for the tests, with the endpoints they need and a log of
//! every request it received.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use tiny_http::{Header, Response, Server};

pub struct TestServer {
    server: Arc<Server>,
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
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
        let server = Arc::new(Server::http("127.0.0.1:0").expect("bind a loopback port"));
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
        TestServer { server, port, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// "METHOD /path" of every request, in order of arrival.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

fn handle(mut request: tiny_http::Request, port: u16, log: &Mutex<Vec<String>>) {
    let url = request.url().to_string();
    let method = request.method().to_string();
    let path = url.split('?').next().unwrap_or_default().to_string();
    log.lock().unwrap().push(format!("{method} {path}"));
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
        "/echo" => {
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
            json_response(
                200,
                json!({"method": method, "url": url, "headers": headers, "body": body}),
            )
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

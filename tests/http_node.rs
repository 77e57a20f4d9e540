//! The http node against a real HTTP server on loopback: extraction, each error category with
//! its `fixable` flag, retries, and the host's HTTP policy.

mod common;

#[path = "common/http_server.rs"]
mod http_server;

use common::TestHome;
use http_server::{user_document, TestServer};
use serde_json::{json, Value};

fn fetch(home: &TestHome, params: Value) -> common::Run {
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "fetch", "type": "http", "params": params}],
        "outputs": {"fetch": {"source": "${fetch}"}}
    });
    home.run_json(&workflow, &[])
}

fn error_of(run: &common::Run) -> Value {
    assert_eq!(run.code, 1, "the node should fail: {}", run.stdout);
    run.report()["error"].clone()
}

#[test]
fn extract_adds_extracted_and_leaves_response_unchanged() {
    let server = TestServer::start();
    let run = fetch(
        &TestHome::new(),
        json!({"url": server.url("/json"), "extract": {
            "name": "$.user.name", "second_lang": "user.langs[1]", "first_id": "$.items[0].id", "items": "$.items"
        }}),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let outputs = &run.report()["outputs"]["fetch"];
    assert_eq!(
        outputs["extracted"],
        json!({"name": "Ada", "second_lang": "fr", "first_id": 7, "items": user_document()["items"]})
    );
    assert_eq!(outputs["response"], user_document());
    assert_eq!(outputs["status_code"], 200);
    assert_eq!(
        outputs["response_headers"]["content-type"],
        "application/json"
    );
    assert!(outputs["response_time"].as_f64().unwrap() > 0.0);
    assert!(outputs.get("raw").is_none());
}

#[test]
fn every_missing_path_is_reported_with_what_is_available() {
    let server = TestServer::start();
    let run = fetch(
        &TestHome::new(),
        json!({"url": server.url("/json"), "extract": {
            "name": "$.user.name", "email": "$.user.email", "third": "$.items[2].name"
        }}),
    );
    let error = error_of(&run);
    assert_eq!(error["category"], "extraction_error");
    assert_eq!(error["fixable"], true);
    assert_eq!(
        error["attempted"],
        json!(["email: $.user.email", "third: $.items[2].name"])
    );
    assert_eq!(error["available"], json!(["items", "total", "user"]));
    let sample = error["sample"].as_str().unwrap();
    assert!(sample.len() <= 503, "{sample}");
    assert!(sample.contains("\"name\":\"Ada\""), "{sample}");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .starts_with("2 of 3 extract path(s) found nothing in the response"));
}

#[test]
fn extract_from_a_body_that_is_not_json_is_not_fixable() {
    let server = TestServer::start();
    let run = fetch(
        &TestHome::new(),
        json!({"url": server.url("/text"), "extract": {"a": "$.a"}}),
    );
    let error = error_of(&run);
    assert_eq!(error["category"], "non_json");
    assert_eq!(error["fixable"], false);
    assert_eq!(error["sample"], "just text, not JSON");
}

#[test]
fn a_text_body_without_extract_is_returned_as_text() {
    let server = TestServer::start();
    let run = fetch(&TestHome::new(), json!({"url": server.url("/text")}));
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.report()["outputs"]["fetch"]["response"],
        "just text, not JSON"
    );
}

#[test]
fn status_401_is_auth_and_not_fixable() {
    let server = TestServer::start();
    let error = error_of(&fetch(
        &TestHome::new(),
        json!({"url": server.url("/status/401")}),
    ));
    assert_eq!(error["category"], "auth");
    assert_eq!(error["fixable"], false);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .starts_with("HTTP 401 Unauthorized from GET"));
}

#[test]
fn status_404_is_a_fixable_client_error_with_the_start_of_the_body() {
    let server = TestServer::start();
    let error = error_of(&fetch(
        &TestHome::new(),
        json!({"url": server.url("/status/404")}),
    ));
    assert_eq!(error["category"], "http_client_error");
    assert_eq!(error["fixable"], true);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("HTTP 404 Not Found from GET http://127.0.0.1:"),
        "{message}"
    );
    assert!(message.contains("status 404 on purpose"), "{message}");
    assert_eq!(server.requests().len(), 1, "a 4xx is not retried");
}

#[test]
fn status_500_is_retried_and_stays_a_server_error() {
    let server = TestServer::start();
    let error = error_of(&fetch(
        &TestHome::new(),
        json!({"url": server.url("/status/500")}),
    ));
    assert_eq!(error["category"], "server_error");
    assert_eq!(error["fixable"], false);
    assert_eq!(
        server.requests(),
        vec!["GET /status/500"; 3],
        "1 attempt + 2 retries"
    );
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("after 3 attempts"));
}

#[test]
fn connection_refused_is_a_network_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let run = fetch(
        &TestHome::new(),
        json!({"url": format!("http://127.0.0.1:{port}/"), "retries": 1}),
    );
    let error = error_of(&run);
    assert_eq!(error["category"], "network");
    assert_eq!(error["fixable"], false);
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("Connection refused"), "{message}");
    assert!(message.contains("after 2 attempts"), "{message}");
}

#[test]
fn a_slow_server_is_a_timeout() {
    let server = TestServer::start();
    let error = error_of(&fetch(
        &TestHome::new(),
        json!({"url": server.url("/slow"), "timeout": 0.3, "retries": 0}),
    ));
    assert_eq!(error["category"], "timeout");
    assert_eq!(error["fixable"], false);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("the request's timeout"));
}

#[test]
fn a_host_outside_the_allow_list_is_refused_before_any_request() {
    let server = TestServer::start();
    let home = TestHome::new();
    home.write_settings(&json!({"http": {"allowed_hosts": ["api.example.com", "*.example.org"]}}));
    let error = error_of(&fetch(&home, json!({"url": server.url("/json")})));
    assert_eq!(error["category"], "policy_denied");
    assert!(error["message"].as_str().unwrap().starts_with(
        "Host '127.0.0.1' is not in the allowed hosts (api.example.com, *.example.org)."
    ));
    assert!(server.requests().is_empty());
}

#[test]
fn a_workflow_can_narrow_the_allowed_hosts_but_not_widen_them() {
    let server = TestServer::start();
    let home = TestHome::new();
    let workflow = |hosts: Value| {
        json!({
            "ir_version": "0.1.0",
            "sandbox": {"http": {"allowed_hosts": hosts}},
            "nodes": [{"id": "fetch", "type": "http", "params": {"url": server.url("/json")}}]
        })
    };
    let run = home.run_json(&workflow(json!(["api.example.com"])), &[]);
    assert_eq!(run.report()["error"]["category"], "policy_denied");
    let run = home.run_json(&workflow(json!(["127.0.0.1"])), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);

    home.write_settings(&json!({"http": {"allowed_hosts": ["localhost"]}}));
    let run = home.run_json(&workflow(json!(["127.0.0.1"])), &[]);
    assert_eq!(run.report()["error"]["category"], "policy_denied");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn redirects_are_followed_and_every_hop_is_checked() {
    let server = TestServer::start();
    let home = TestHome::new();
    let run = fetch(
        &home,
        json!({"url": server.url("/redirect"), "extract": {"n": "$.user.name"}}),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["fetch"]["extracted"]["n"], "Ada");
    assert_eq!(server.requests(), ["GET /redirect", "GET /json"]);

    home.write_settings(&json!({"http": {"allowed_hosts": ["127.0.0.1"]}}));
    let error = error_of(&fetch(
        &home,
        json!({"url": server.url("/redirect-elsewhere")}),
    ));
    assert_eq!(error["category"], "policy_denied");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("Host 'localhost'"));
    assert_eq!(
        server.requests().len(),
        3,
        "the hop to localhost was not sent"
    );
}

#[test]
fn a_response_over_the_size_cap_is_refused() {
    let server = TestServer::start();
    let home = TestHome::new();
    home.write_settings(&json!({"http": {"max_response_mb": 1}}));
    let error = error_of(&fetch(&home, json!({"url": server.url("/big")})));
    assert_eq!(error["category"], "response_too_large");
    assert_eq!(error["fixable"], false);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("over the 1.0 MiB cap"));
}

#[test]
fn body_headers_query_and_credentials_are_sent() {
    let server = TestServer::start();
    let run = fetch(
        &TestHome::new(),
        json!({
            "url": server.url("/echo"),
            "body": {"q": [1, 2]},
            "params": {"page": 2, "tag": "a b"},
            "headers": {"X-Trace": "t1"},
            "auth_token": "secret-token",
            "api_key": "k-123",
            "api_key_header": "X-Key"
        }),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let echoed = &run.report()["outputs"]["fetch"]["response"];
    assert_eq!(
        echoed["method"], "POST",
        "a body makes the default method POST"
    );
    assert_eq!(echoed["url"], "/echo?page=2&tag=a+b");
    assert_eq!(echoed["body"], r#"{"q":[1,2]}"#);
    assert_eq!(echoed["headers"]["content-type"], "application/json");
    assert_eq!(echoed["headers"]["authorization"], "Bearer secret-token");
    assert_eq!(echoed["headers"]["x-key"], "k-123");
    assert_eq!(echoed["headers"]["x-trace"], "t1");
}

#[test]
fn later_nodes_use_extracted_values_and_response_paths() {
    let server = TestServer::start();
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"base": {"type": "string"}},
        "nodes": [
            {"id": "fetch", "type": "http", "params": {"url": "${base}/json", "extract": {"name": "$.user.name"}}},
            {"id": "greet", "type": "shell", "params": {
                "command": "echo \"$NAME has item $ID\"",
                "env": {"NAME": "${fetch.extracted.name}", "ID": "${fetch.response.items[0].id}"}
            }}
        ],
        "edges": [{"from": "fetch", "to": "greet"}],
        "outputs": {"greeting": {"source": "${greet.stdout}"}}
    });
    let run = TestHome::new().run_json(&workflow, &[&format!("base={}", server.url(""))]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["greeting"], "Ada has item 7");
}

#[test]
fn a_non_2xx_answer_routes_along_the_error_edge() {
    let server = TestServer::start();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "fetch", "type": "http", "params": {"url": server.url("/status/404")}},
            {"id": "fallback", "type": "echo", "params": {"why": "${fetch.error}"}}
        ],
        "edges": [{"from": "fetch", "to": "fallback", "action": "error"}],
        "outputs": {"why": {"source": "${fallback.why}"}}
    });
    let run = TestHome::new().run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.node("fetch")["action"], "error");
    assert!(run.report()["outputs"]["why"]
        .as_str()
        .unwrap()
        .starts_with("HTTP 404 Not Found"));
}

#[test]
fn malformed_urls_and_methods_are_fixable_bad_params() {
    let home = TestHome::new();
    let error = error_of(&fetch(&home, json!({"url": "not a url"})));
    assert_eq!(error["category"], "bad_params");
    assert_eq!(error["fixable"], true);
    let error = error_of(&fetch(&home, json!({"url": "ftp://127.0.0.1/x"})));
    assert_eq!(error["category"], "policy_denied");
    assert!(error["message"].as_str().unwrap().contains("scheme 'ftp'"));
}

//! The hostile suite: every way out of the sandbox that has been tried, against the real
//! binary. A dry run leaves no file, reaches no server and harms no process; no process
//! outlives its node, whatever it does with sessions and groups; signals to the host clean up;
//! MCP servers that hang in their handshake are killed; credentials stay with their origin;
//! addresses the policy refuses are never connected to; and oversized or malicious input is
//! refused at once. Each test checks afterwards that nothing it started is still running.

mod common;

#[path = "common/http_server.rs"]
mod http_server;

use common::{processes_marked, TestHome};
use http_server::TestServer;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A marker no other test uses, for finding the processes a test started.
fn marker(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// One shell node running `command` with `marker` in its environment.
fn shell(command: &str, marker: &str) -> Value {
    json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "attack", "type": "shell", "params": {
            "command": command,
            "env": {"PFLOW_TEST_MARKER": marker},
            "ignore_errors": true
        }}]
    })
}

/// `validate --runtime` (dry) of `workflow`: the report.
fn dry_run(home: &TestHome, workflow: &Value) -> Value {
    let path = home.workflow("dry.json", workflow);
    let run = home.run_args(&[
        "validate",
        "--runtime",
        path.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    run.report()
}

fn assert_nothing_left(marker: &str) {
    // A process that is being killed may take a moment to disappear from /proc.
    let until = Instant::now() + Duration::from_secs(2);
    while !processes_marked(marker).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        processes_marked(marker),
        Vec::<String>::new(),
        "processes marked {marker} outlived their node"
    );
}

/// A directory on the host that dry commands try to write into.
fn target_dir(home: &TestHome) -> PathBuf {
    let dir = home.path().join("real");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn dry_writes_through_proc_namespaces_symlinks_and_mounts_never_reach_the_host() {
    let home = TestHome::new();
    let dir = target_dir(&home);
    let me = std::process::id();
    let shm = format!("pflow-escape-{me}");
    // Each writes to `TARGET`, a file in `dir` named after the attack, by another way out.
    let attacks = [
        ("proc-ppid-root", "echo x > /proc/$PPID/rootTARGET".to_string()),
        ("proc-1-root", "echo x > /proc/1/rootTARGET".to_string()),
        ("proc-host-pid-root", format!("echo x > /proc/{me}/rootTARGET")),
        (
            "nsenter-mnt",
            format!("nsenter --mount=/proc/{me}/ns/mnt sh -c 'echo x > TARGET'"),
        ),
        (
            "symlink",
            "ln -s /proc/1/root /tmp/link-$$ && echo x > /tmp/link-$$TARGET".to_string(),
        ),
        (
            "symlink-host",
            format!("ln -s /proc/{me}/root /tmp/hlink-$$ && echo x > /tmp/hlink-$$TARGET"),
        ),
        (
            "mount-proc",
            format!("mkdir -p /tmp/p && mount -t proc proc /tmp/p && echo x > /tmp/p/{me}/rootTARGET"),
        ),
        (
            "mount-bind",
            "mkdir -p /tmp/b && mount --bind / /tmp/b && echo x > /tmp/bTARGET".to_string(),
        ),
        (
            "unshare-mount",
            format!("unshare --mount sh -c 'mount -t proc proc /proc && echo x > /proc/{me}/rootTARGET'"),
        ),
        ("dev-shm", format!("echo x > /dev/shm/{shm}")),
    ];
    for (name, command) in &attacks {
        let command = command.replace("TARGET", &dir.join(name).display().to_string());
        let marker = marker(&format!("dry-{name}"));
        dry_run(&home, &shell(&command, &marker));
        assert_nothing_left(&marker);
        assert!(
            !dir.join(name).exists(),
            "dry run escaped through {name}: {command}"
        );
    }
    assert!(
        !Path::new("/dev/shm").join(&shm).exists(),
        "a dry run wrote into the host's /dev/shm"
    );
    // The writes the command was allowed to make were to its throwaway view, and are listed.
    let report = dry_run(
        &home,
        &shell(&format!("echo x > {}", dir.join("plain").display()), "-"),
    );
    assert!(!dir.join("plain").exists());
    assert_eq!(report["effects"][0]["change"], "created", "{report}");
}

#[test]
fn a_dry_command_reaches_no_server_not_even_through_the_hosts_network_namespace() {
    let home = TestHome::new();
    let server = TestServer::start();
    let fetch = format!(
        "python3 -c \"import urllib.request; urllib.request.urlopen('{}', timeout=2)\"",
        server.url("/json")
    );
    let me = std::process::id();
    for command in [
        fetch.clone(),
        format!("nsenter --net=/proc/{me}/ns/net {fetch}"),
        format!("nsenter --net=/proc/1/ns/net {fetch}"),
    ] {
        let marker = marker("dry-net");
        let report = dry_run(&home, &shell(&command, &marker));
        assert_nothing_left(&marker);
        assert!(
            server.requests().is_empty(),
            "{command} reached the server: {report}"
        );
    }
}

#[test]
fn a_dry_command_cannot_signal_host_processes() {
    let home = TestHome::new();
    let mut victim = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = victim.id();
    let marker = marker("dry-kill");
    dry_run(
        &home,
        &shell(
            &format!("kill -9 {pid}; kill -9 -{pid}; pkill -9 sleep"),
            &marker,
        ),
    );
    assert_nothing_left(&marker);
    assert!(
        victim.try_wait().unwrap().is_none(),
        "a dry run killed host process {pid}"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn a_dry_command_runs_with_no_capabilities_under_a_seccomp_filter() {
    let home = TestHome::new();
    let marker = marker("dry-seccomp");
    // PTRACE_TRACEME succeeds for any process the filter does not cover; clone with a new
    // namespace and unshare are refused too. The command fails unless all are refused.
    let probe = "python3 -c \"import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n\
        status = open('/proc/self/status').read()\n\
        assert 'CapEff:\\t0000000000000000' in status, status\n\
        assert 'NoNewPrivs:\\t1' in status, status\n\
        assert 'Seccomp_filters:\\t2' in status, status\n\
        assert libc.ptrace(0, 0, 0, 0) == -1 and ctypes.get_errno() == 1\n\
        assert libc.unshare(0x10000000) == -1 and ctypes.get_errno() == 1\n\
        assert libc.syscall(56, 0x10000000, 0, 0, 0, 0) == -1 and ctypes.get_errno() == 1\n\
        assert os.fork() or os._exit(0) or True\"";
    let mut workflow = shell(probe, &marker);
    workflow["nodes"][0]["params"]["ignore_errors"] = json!(false);
    let report = dry_run(&home, &workflow);
    assert_eq!(report["route"], "default", "{report}");
    assert_nothing_left(&marker);
}

#[test]
fn a_late_writer_dies_with_its_dry_command() {
    let home = TestHome::new();
    let dir = target_dir(&home);
    let late = dir.join("late");
    let marker = marker("dry-late");
    let command = format!(
        "setsid sh -c 'sleep 1; echo late > {0}; echo late > /proc/1/root{0}' >/dev/null 2>&1 & echo started",
        late.display()
    );
    let report = dry_run(&home, &shell(&command, &marker));
    assert_eq!(report["route"], "default", "{report}");
    assert_nothing_left(&marker);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !late.exists(),
        "a process of the dry run wrote after it ended"
    );
}

#[test]
fn live_commands_that_leave_their_group_die_with_their_node() {
    let home = TestHome::new();
    let dir = target_dir(&home);
    let marker = marker("live-escape");
    let file = |name: &str| dir.join(name).display().to_string();
    let escapes = [
        format!("setsid -f sh -c 'sleep 1; touch {}'", file("setsid-f")),
        format!("setsid sh -c 'sleep 1; touch {}' >/dev/null 2>&1 &", file("setsid-bg")),
        format!("(sh -c 'sleep 1; touch {}' >/dev/null 2>&1 &) &", file("double-fork")),
        format!(
            "python3 -c \"import os, time\nos.setpgid(0, 0)\nif os.fork() == 0:\n    time.sleep(1)\n    open('{}', 'w').close()\"",
            file("setpgid-fork")
        ),
    ];
    let nodes: Vec<Value> = escapes
        .iter()
        .enumerate()
        .map(|(i, command)| {
            json!({"id": format!("n{i}"), "type": "shell", "params": {
                "command": command, "env": {"PFLOW_TEST_MARKER": marker}
            }})
        })
        .collect();
    let edges: Vec<Value> = (1..nodes.len())
        .map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")}))
        .collect();
    let workflow = json!({"ir_version": "0.1.0", "nodes": nodes, "edges": edges});
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_nothing_left(&marker);
    std::thread::sleep(Duration::from_millis(1500));
    for name in ["setsid-f", "setsid-bg", "double-fork", "setpgid-fork"] {
        assert!(
            !dir.join(name).exists(),
            "a process started by a node ({name}) outlived it"
        );
    }
}

#[test]
fn the_wall_time_limit_holds_when_an_escaped_child_keeps_the_pipes_open() {
    let home = TestHome::new();
    let marker = marker("pipes");
    let limited = |command: &str| {
        let mut workflow = shell(command, &marker);
        workflow["sandbox"] = json!({"timeout_seconds": 3});
        workflow["nodes"][0]["params"]["ignore_errors"] = json!(false);
        workflow
    };
    // The command itself ends at once; the child holding stdout must not hold up the node.
    let started = Instant::now();
    let run = home.run_json(&limited("setsid sleep 50 & echo started"), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the node waited {:?} for a child that escaped",
        started.elapsed()
    );
    assert_nothing_left(&marker);

    // The command outlives the limit: it and the escaped child are killed at the deadline.
    let started = Instant::now();
    let run = home.run_json(&limited("setsid sleep 50 & sleep 50"), &[]);
    let elapsed = started.elapsed();
    assert_eq!(run.code, 1);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "timeout", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("3.0 s wall-time limit"),
        "{error}"
    );
    assert!(elapsed < Duration::from_secs(8), "took {elapsed:?}");
    assert_nothing_left(&marker);
}

/// Starts `args` and waits until a process marked `marker` runs.
fn start_and_wait_for(home: &TestHome, args: &[&str], marker: &str) -> Child {
    let child = home
        .command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while processes_marked(marker).is_empty() {
        assert!(Instant::now() < until, "the marked command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a child this test started.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

#[test]
fn sigterm_sighup_and_ctrl_c_to_the_host_leave_no_process_and_no_scratch() {
    let home = TestHome::new();
    for (name, sig, dry) in [
        ("sigterm", libc::SIGTERM, false),
        ("sighup", libc::SIGHUP, false),
        ("sigint-dry", libc::SIGINT, true),
        ("sigterm-dry", libc::SIGTERM, true),
    ] {
        let marker = marker(name);
        let path = home.workflow(&format!("{name}.json"), &shell("sleep 30", &marker));
        let path = path.to_str().unwrap();
        let args: Vec<&str> = if dry {
            vec!["validate", "--runtime", path]
        } else {
            vec!["run", path]
        };
        let child = start_and_wait_for(&home, &args, &marker);
        let host = child.id();
        signal(&child, sig);
        let started = Instant::now();
        let output = child.wait_with_output().unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "{name}: slow");
        assert_eq!(
            output.status.code(),
            Some(130),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_nothing_left(&marker);
        let scratch = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("pflow-dry-{host}-"))
            })
            .count();
        assert_eq!(
            scratch, 0,
            "{name}: the dry run's scratch directory was left"
        );
    }
}

/// A server that never answers the MCP handshake, synced earlier as having tool `wait`.
fn home_with_hanging_server(marker: &str) -> TestHome {
    let home = TestHome::new();
    std::fs::write(
        home.path().join("mcp-servers.json"),
        json!({"mcpServers": {"hang": {
            "command": "sh", "args": ["-c", "exec sleep 60"], "env": {"PFLOW_TEST_MARKER": marker}
        }}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("mcp-tools.json"),
        json!({"servers": {"hang": [{"name": "wait", "inputSchema": {"type": "object"}}]}})
            .to_string(),
    )
    .unwrap();
    home
}

#[test]
fn an_mcp_server_that_hangs_in_its_handshake_is_killed_in_run_sync_and_on_ctrl_c() {
    let marker = marker("mcp-handshake");
    let home = home_with_hanging_server(&marker);

    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "call", "type": "mcp-hang-wait", "params": {}, "sandbox": {"timeout_seconds": 2}}]
    });
    let started = Instant::now();
    let run = home.run_json(&workflow, &[]);
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(
        run.report()["error"]["category"],
        "timeout",
        "{}",
        run.stdout
    );
    assert_nothing_left(&marker);

    let started = Instant::now();
    let sync = home.run_args(&["mcp", "sync", "--timeout", "2"]);
    assert_eq!(sync.code, 1, "{}", sync.stderr);
    assert!(sync.stderr.contains("hang"), "{}", sync.stderr);
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_nothing_left(&marker);

    let child = start_and_wait_for(&home, &["mcp", "sync"], &marker);
    signal(&child, libc::SIGINT);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert_nothing_left(&marker);
}

/// The http node against `url` with credentials of every kind, and `extra` params.
fn with_credentials(url: &str, extra: Value) -> Value {
    let mut params = json!({
        "url": url,
        "auth_token": "secret-token",
        "api_key": "secret-key",
        "headers": {"Cookie": "session=secret-cookie", "Accept": "application/json"}
    });
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"ir_version": "0.1.0", "nodes": [{"id": "fetch", "type": "http", "params": params}]})
}

#[test]
fn credentials_and_bodies_do_not_follow_a_redirect_to_another_host() {
    let home = TestHome::new();
    let first = TestServer::start_on("127.0.0.1");
    let other = TestServer::start_on("127.0.0.2");
    let elsewhere = |status: u16| {
        first.url(&format!(
            "/redirect-to?status={status}&url={}",
            other.url("/echo")
        ))
    };

    let run = home.run_json(&with_credentials(&elsewhere(302), json!({})), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let received = other.received();
    assert_eq!(received.len(), 1);
    let headers = &received[0]["headers"];
    for secret in ["authorization", "x-api-key", "cookie"] {
        assert!(
            headers.get(secret).is_none(),
            "{secret} crossed to another host: {headers}"
        );
    }
    assert_eq!(headers["accept"], "application/json");
    // The first host did get them: they were meant for it.
    assert_eq!(
        first.received()[0]["headers"]["authorization"],
        "Bearer secret-token"
    );

    // A 307 keeps the method and body: only to the same origin.
    let post = json!({"method": "POST", "body": {"card": "4111"}});
    let run = home.run_json(&with_credentials(&elsewhere(307), post.clone()), &[]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.report()["error"]["category"],
        "policy_denied",
        "{}",
        run.stdout
    );
    assert_eq!(
        other.received().len(),
        1,
        "the POST body crossed to another host"
    );
    let same_origin = first.url(&format!(
        "/redirect-to?status=307&url={}",
        first.url("/echo")
    ));
    let run = home.run_json(&with_credentials(&same_origin, post), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let last = first.received().pop().unwrap();
    assert_eq!(last["method"], "POST");
    assert_eq!(last["body"], json!({"card": "4111"}).to_string());
    assert_eq!(last["headers"]["authorization"], "Bearer secret-token");
}

#[test]
fn loopback_is_reachable_by_default_and_refused_under_deny_private() {
    let server = TestServer::start();
    let fetch = |url: String| json!({"ir_version": "0.1.0", "nodes": [{"id": "fetch", "type": "http", "params": {"url": url}}]});
    let home = TestHome::new();
    let run = home.run_json(&fetch(server.url("/json")), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(server.requests().len(), 1);

    home.write_settings(&json!({"http": {"deny_private": true}}));
    for url in [
        server.url("/json"),
        format!("http://localhost:{}/json", server.port),
        format!("http://[::ffff:127.0.0.1]:{}/json", server.port),
    ] {
        let run = home.run_json(&fetch(url.clone()), &[]);
        assert_eq!(run.code, 1, "{url}: {}", run.stdout);
        let error = &run.report()["error"];
        assert_eq!(error["category"], "policy_denied", "{url}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains("deny_private"),
            "{error}"
        );
    }
    assert_eq!(
        server.requests().len(),
        1,
        "a refused address was connected to"
    );
}

#[test]
fn cloud_metadata_addresses_are_refused_before_any_connection() {
    for settings in [json!({}), json!({"http": {"deny_private": true}})] {
        let home = TestHome::new();
        home.write_settings(&settings);
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/latest/meta-data/",
            "http://[fe80::1]/",
            "http://[::ffff:169.254.169.254]/",
        ] {
            let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "fetch", "type": "http",
                "params": {"url": url, "timeout": 30, "retries": 3}}]});
            let run = home.run_json(&workflow, &[]);
            let error = &run.report()["error"];
            assert_eq!(error["category"], "policy_denied", "{url}: {error}");
            // Refused by the policy, not by a failed connection: nothing was attempted.
            assert!(
                error["message"]
                    .as_str()
                    .unwrap()
                    .contains("was not requested"),
                "{url}: {error}"
            );
            assert!(
                !error["message"].as_str().unwrap().contains("attempts"),
                "{error}"
            );
        }
    }
}

#[test]
fn a_dry_get_with_a_body_is_not_sent() {
    let home = TestHome::new();
    let server = TestServer::start();
    let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "fetch", "type": "http",
        "params": {"url": server.url("/echo"), "method": "GET", "body": {"delete": "everything"}}}]});
    let report = dry_run(&home, &workflow);
    assert_eq!(report["unverified"][0]["node_id"], "fetch", "{report}");
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn streamable_http_mcp_servers_are_reached_under_the_http_policy() {
    let home = TestHome::new();
    home.write_settings(&json!({"http": {"deny_private": true}}));
    let server = TestServer::start();
    std::fs::write(
        home.path().join("mcp-servers.json"),
        json!({"mcpServers": {"local": {"type": "http", "url": server.url("/mcp")}}}).to_string(),
    )
    .unwrap();
    let sync = home.run_args(&["mcp", "sync", "--timeout", "5"]);
    assert_eq!(sync.code, 1, "{}", sync.stderr);
    assert!(sync.stderr.contains("deny_private"), "{}", sync.stderr);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn retry_messages_count_the_attempts_actually_made() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let home = TestHome::new();
    // 10 retries would take 200 + 400 + ... ms; the 1 s limit leaves room for only a few.
    let workflow = json!({"ir_version": "0.1.0", "sandbox": {"timeout_seconds": 1},
        "nodes": [{"id": "fetch", "type": "http", "params": {"url": format!("http://127.0.0.1:{port}/"), "retries": 10}}]});
    let run = home.run_json(&workflow, &[]);
    let message = run.report()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    let made = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!((2..11).contains(&made), "{made} attempts: {message}");
    assert!(
        message.contains(&format!("after {made} attempts")),
        "{made} connections, but: {message}"
    );
}

#[test]
fn flooding_both_streams_is_an_output_limit_of_the_node() {
    let home = TestHome::new();
    let marker = marker("flood");
    let mut workflow = shell("yes out & yes err >&2 & wait", &marker);
    workflow["sandbox"] = json!({"output_mb": 1, "timeout_seconds": 20});
    workflow["nodes"][0]["params"]["ignore_errors"] = json!(false);
    let started = Instant::now();
    let run = home.run_json(&workflow, &[]);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "output_limit", "{error}");
    assert_eq!(error["node_id"], "attack");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_nothing_left(&marker);
}

/// `${a[${a[...${x}...]}]}`, `levels` deep.
fn nested_template(levels: usize) -> String {
    let mut text = "${x}".to_string();
    for _ in 1..levels {
        text = format!("${{a[{text}]}}");
    }
    text
}

#[test]
fn deeply_nested_templates_are_refused_at_once_by_validate_and_run() {
    let home = TestHome::new();
    let workflow = json!({"ir_version": "0.1.0",
        "nodes": [{"id": "a", "type": "shell", "params": {"command": nested_template(20_000)}}]});
    let path = home.workflow("deep.json", &workflow);
    let path = path.to_str().unwrap();
    let expected = "nodes[0].params.command: templates nested 20000 levels deep; the limit is 64";
    let started = Instant::now();
    let validate = home.run_args(&["validate", path]);
    assert_eq!(validate.code, 1);
    assert!(validate.stdout.contains(expected), "{}", validate.stdout);
    let run = home.run_args(&["run", path]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains(expected), "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn an_endless_workflow_file_is_refused_at_the_size_cap() {
    let home = TestHome::new();
    for args in [["run", "/dev/zero"], ["validate", "/dev/zero"]] {
        let run = home.run_args(&args);
        assert_eq!(run.code, 2, "{args:?}");
        assert!(
            run.stderr.contains("is larger than 64 MiB"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn validate_and_run_agree_on_duplicate_keys_and_cycles() {
    let home = TestHome::new();
    let duplicate = home.path().join("duplicate.json");
    std::fs::write(
        &duplicate,
        r#"{"ir_version": "0.1.0", "nodes": [{"id": "a", "type": "shell", "type": "http", "params": {"command": "true"}}]}"#,
    )
    .unwrap();
    let cycle = home.workflow(
        "cycle.json",
        &json!({"ir_version": "0.1.0", "nodes": [
            {"id": "a", "type": "shell", "params": {"command": "true"}},
            {"id": "b", "type": "shell", "params": {"command": "true"}}
        ], "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]}),
    );
    for (file, expected) in [
        (&duplicate, "duplicate key 'type'"),
        (&cycle, "Circular dependency detected involving nodes: a, b"),
    ] {
        let file = file.to_str().unwrap();
        let validate = home.run_args(&["validate", file]);
        assert_eq!(validate.code, 1);
        assert!(validate.stdout.contains(expected), "{}", validate.stdout);
        let run = home.run_args(&["run", file]);
        assert_eq!(run.code, 2, "{}", run.stdout);
        assert!(run.stderr.contains(expected), "{}", run.stderr);
    }
}

#[test]
fn what_a_killed_host_leaves_is_killed_by_the_next_one() {
    // SIGKILL cannot be handled: the command the host waits on dies with it (parent-death
    // signal), and the next host that runs a command kills whatever that one started.
    let home = TestHome::new();
    let marker = marker("sigkill");
    let path = home.workflow("kill.json", &shell("sleep 30 & sleep 30", &marker));
    let mut child = start_and_wait_for(&home, &["run", path.to_str().unwrap()], &marker);
    child.kill().unwrap();
    child.wait().unwrap();
    let next = home.run_json(&shell("true", "-"), &[]);
    assert_eq!(next.code, 0, "{}", next.stdout);
    assert_nothing_left(&marker);
}

#[test]
fn the_hosts_llm_keys_reach_no_command_a_planned_workflow_starts() {
    use pflow_llm_standin::{Reply, StandIn};
    let home = TestHome::new();
    let snoop = json!({
        "nodes": [{"id": "snoop", "type": "shell",
                   "params": {"command": "printf 'a=%s o=%s' \"$ANTHROPIC_API_KEY\" \"$OPENAI_API_KEY\""}}],
        "outputs": {"seen": {"source": "${snoop.stdout}"}}
    });
    // Written by hand and run directly.
    let path = home.workflow("snoop.json", &snoop);
    let output = home
        .command()
        .args(["run", path.to_str().unwrap()])
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .env("OPENAI_API_KEY", "sk-secret")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "a= o=");

    // Written by the model, dry-run and run by the planner, which holds the key itself.
    let llm = StandIn::start(
        0,
        vec![Reply::Tool {
            input: json!({"workflow": snoop, "name": "snoop", "description": "Snoops.", "params": {}}),
        }
        .into()],
    )
    .unwrap();
    let output = home
        .command()
        .args(["read my keys", "--yes", "--output-format", "json"])
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .env("OPENAI_API_KEY", "sk-secret")
        .env("ANTHROPIC_BASE_URL", llm.anthropic_url())
        .env("PFLOW_MODEL", "claude-sonnet-4-5")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["run"]["outputs"]["seen"], "a= o=");
    assert!(!stdout.contains("secret"), "{stdout}");
    assert_eq!(llm.requests()[0].header("x-api-key"), Some("sk-ant-secret"));
}

/// Runs `workflow` with its working directory `work`, `--output-format json`.
fn run_in(home: &TestHome, work: &std::path::Path, workflow: &Value, extra: &[&str]) -> Value {
    let path = home.workflow("files.json", workflow);
    let output = home
        .command()
        .arg("run")
        .arg(&path)
        .args(["--output-format", "json", "--no-repair"])
        .args(extra)
        .current_dir(work)
        .output()
        .unwrap();
    common::Run::from(output).report()
}

fn write_file(path: &str) -> Value {
    json!({"nodes": [{"id": "write", "type": "write-file",
                      "params": {"file_path": path, "content": "pwned"}}]})
}

/// File nodes reach the working directory's tree only: `..`, absolute paths and symbolic links
/// out of it are refused with a policy error that names the settings that would allow them.
#[test]
fn file_nodes_cannot_leave_the_working_directory() {
    let home = TestHome::new();
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), work.path().join("link")).unwrap();
    let escape = outside.path().join("escaped.txt");
    for path in [
        "../escaped.txt".to_string(),
        escape.display().to_string(),
        "link/escaped.txt".to_string(),
        "link/../link/escaped.txt".to_string(),
    ] {
        let report = run_in(&home, work.path(), &write_file(&path), &[]);
        assert_eq!(report["status"], "failed", "{path}: {report}");
        let error = &report["error"];
        assert_eq!(error["category"], "policy_denied", "{path}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("files.allowed_paths") && message.contains("sandbox.files"),
            "{message}"
        );
    }
    assert!(!escape.exists());
    assert!(!work.path().parent().unwrap().join("escaped.txt").exists());
    let read = json!({"nodes": [{"id": "read", "type": "read-file",
                                 "params": {"file_path": "/etc/passwd"}}]});
    let report = run_in(&home, work.path(), &read, &[]);
    assert_eq!(report["error"]["category"], "policy_denied");

    // The settings and the workflow can widen it.
    home.write_settings(&json!({"files": {"allowed_paths": [outside.path()]}}));
    let report = run_in(
        &home,
        work.path(),
        &write_file(&escape.display().to_string()),
        &[],
    );
    assert_eq!(report["status"], "succeeded", "{report}");
    assert_eq!(std::fs::read_to_string(&escape).unwrap(), "pwned");
    home.write_settings(&json!({}));
    let mut widened = write_file(&outside.path().join("second.txt").display().to_string());
    widened["sandbox"] = json!({"files": {"allowed_paths": [outside.path()]}});
    let report = run_in(&home, work.path(), &widened, &[]);
    assert_eq!(report["status"], "succeeded", "{report}");
}

/// In a dry run, file nodes write to a scratch layer: later nodes read what was written, the
/// disk is untouched, and every change is listed as a would-be effect.
#[test]
fn dry_file_writes_never_reach_the_disk_and_are_listed() {
    let home = TestHome::new();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("existing.txt"), "original").unwrap();
    let workflow = json!({
        "inputs": {"confirm_delete": {"type": "boolean", "required": false, "default": true}},
        "nodes": [
            {"id": "create", "type": "write-file", "params": {"file_path": "new/created.txt", "content": "draft"}},
            {"id": "change", "type": "write-file", "params": {"file_path": "existing.txt", "content": "changed"}},
            {"id": "read", "type": "read-file", "params": {"file_path": "new/created.txt"}},
            {"id": "delete", "type": "delete-file", "params": {"file_path": "existing.txt",
                "inputs": {"confirm_delete": "${confirm_delete}"}}},
            {"id": "echo", "type": "echo", "params": {"saw": "${read.content}"}}
        ],
        "edges": [{"from": "create", "to": "change"}, {"from": "change", "to": "read"},
                  {"from": "read", "to": "delete"}, {"from": "delete", "to": "echo"}]
    });
    let path = home.workflow("dry.json", &workflow);
    let output = home
        .command()
        .args([
            "validate",
            "--runtime",
            path.to_str().unwrap(),
            "--output-format",
            "json",
        ])
        .current_dir(work.path())
        .output()
        .unwrap();
    let report = common::Run::from(output).report();
    assert_eq!(report["route"], "default", "{report}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("existing.txt")).unwrap(),
        "original"
    );
    assert!(!work.path().join("new").exists());
    let effects: Vec<(String, String)> = report["effects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let path = e["path"].as_str().unwrap();
            let name = path.rsplit('/').next().unwrap().to_string();
            (e["change"].as_str().unwrap().to_string(), name)
        })
        .collect();
    assert_eq!(
        effects,
        [
            ("created".to_string(), "created.txt".to_string()),
            ("changed".to_string(), "existing.txt".to_string()),
            ("deleted".to_string(), "existing.txt".to_string()),
        ]
    );
}

/// delete-file acts only on a boolean `true` mapped through `inputs:`, never on a param.
#[test]
fn delete_file_needs_confirm_delete_true_through_inputs() {
    let home = TestHome::new();
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("keep.txt");
    std::fs::write(&target, "keep").unwrap();
    let attempt = |inputs: Value, confirm_param: Option<Value>| {
        let mut params = json!({"file_path": "keep.txt", "inputs": inputs});
        if let Some(value) = confirm_param {
            params["confirm_delete"] = value;
        }
        let workflow = json!({
            "inputs": {"yes": {"type": "string", "required": false, "default": "true"}},
            "nodes": [{"id": "delete", "type": "delete-file", "params": params}]
        });
        run_in(&home, work.path(), &workflow, &[])
    };
    let text_true = attempt(json!({"confirm_delete": "${yes}"}), None);
    assert_eq!(text_true["error"]["category"], "bad_params", "{text_true}");
    let as_param = attempt(json!({"confirm_delete": "${yes}"}), Some(json!(true)));
    assert_eq!(as_param["status"], "failed");
    assert!(target.exists());
    let confirmed = attempt(json!({"confirm_delete": true, "unused": "${yes}"}), None);
    assert_eq!(confirmed["status"], "succeeded", "{confirmed}");
    assert!(!target.exists());
}

/// An `llm` node cannot send the configured key anywhere else: it has no say over the base URL,
/// and naming another provider's model finds no key for it (no request leaves at all).
#[test]
fn an_llm_node_cannot_redirect_the_key() {
    use pflow_llm_standin::{Reply, StandIn};
    let home = TestHome::new();
    let provider = StandIn::start(0, vec![Reply::Text { text: "hi".into() }.into()]).unwrap();
    let thief = StandIn::start(
        0,
        vec![Reply::Text {
            text: "got it".into(),
        }
        .into()],
    )
    .unwrap();
    let workflow = json!({"nodes": [{"id": "ask", "type": "llm", "params": {
        "prompt": "hello",
        "model": "openai/gpt-4o",
        "base_url": thief.openai_url(),
        "model_options": {"base_url": thief.openai_url(), "api_base": thief.openai_url()}
    }}]});
    let path = home.workflow("steal.json", &workflow);
    let output = home
        .command()
        .env("ANTHROPIC_BASE_URL", provider.anthropic_url())
        .env("ANTHROPIC_API_KEY", "sk-secret-for-anthropic-only")
        .env("PFLOW_MODEL", "claude-sonnet-4-5")
        .args([
            "run",
            path.to_str().unwrap(),
            "--output-format",
            "json",
            "--no-repair",
        ])
        .output()
        .unwrap();
    let report = common::Run::from(output).report();
    assert_eq!(report["error"]["category"], "llm_unavailable", "{report}");
    assert!(thief.requests().is_empty());
    assert!(provider.requests().is_empty());
    assert!(!report.to_string().contains("sk-secret-for-anthropic-only"));
}

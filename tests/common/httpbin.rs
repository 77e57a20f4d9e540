//! httpbin (PyPI, installed by `just test-peers`) on a free loopback port, stopped on drop:
//! the real HTTP service of the differential corpus, for its tests and its benchmark.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Httpbin {
    child: Child,
    pub base: String,
}

impl Httpbin {
    pub fn start() -> Httpbin {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args(["-m", "httpbin.core", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m httpbin.core (just test-peers installs httpbin)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "httpbin did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Httpbin {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Httpbin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! Every process a command starts, killed together.
//!
//! A process group is not enough: `setsid`, `setpgid` and daemons leave it, and then outlive
//! the node (and hold its output pipes open). Each command therefore gets a cgroup v2 of its
//! own, which the child is created in (see [`crate::spawn`]) or joins between `fork` and
//! `exec`, before it can start anything. Whatever it starts stays in that cgroup, whatever it
//! does with sessions and groups, and `cgroup.kill` ends them all at once.
//!
//! A host killed outright (SIGKILL) cannot clean up: the command it was waiting on dies with it
//! (parent-death signal), and whatever that command started is killed by the next host that
//! confines a command, which sweeps the cgroups of hosts that are gone.
//!
//! Where cgroup v2 is not writable (no cgroup2 mount, or an unprivileged user without a
//! delegated subtree), the process group is all there is; that is logged once.

use crate::spawn::{spawn_into_cgroup, Spec, Started};
use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long dropping a confinement waits for killed processes to leave the cgroup.
const EMPTY_WAIT: Duration = Duration::from_secs(2);

/// The processes of one command (or one MCP server).
pub struct Confinement {
    cgroup: Option<Cgroup>,
}

struct Cgroup {
    dir: PathBuf,
    /// The directory itself, for `clone3(CLONE_INTO_CGROUP)`.
    handle: File,
    /// `cgroup.procs`, opened before the fork: a child started without `clone3` only has to
    /// write to it.
    procs: File,
}

impl Confinement {
    /// A fresh cgroup under this process's own, or only the process group when none can be made.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let cgroup = own_cgroup_dir().and_then(|parent| {
            let dir = parent.join(format!(
                "pflow-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir(&dir).ok()?;
            let opened = File::open(&dir).and_then(|handle| {
                let procs = std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.join("cgroup.procs"))?;
                Ok((handle, procs))
            });
            match opened {
                Ok((handle, procs)) => {
                    live_cgroups().insert(dir.clone());
                    Some(Cgroup { dir, handle, procs })
                }
                Err(_) => {
                    let _ = std::fs::remove_dir(&dir);
                    None
                }
            }
        });
        if cgroup.is_none() {
            static WARNED: OnceLock<()> = OnceLock::new();
            WARNED.get_or_init(|| {
                tracing::warn!(
                    "cgroup v2 is not writable here: commands are confined to their process \
                     group only, and a command that leaves it (setsid) can outlive its node"
                )
            });
        }
        Confinement { cgroup }
    }

    /// Starts a command in this confinement: created inside the cgroup where the kernel
    /// allows (`clone3`), else started by std and moved into it before it execs.
    pub fn spawn(&self, spec: &Spec<'_>) -> io::Result<Started> {
        if let Some(cgroup) = &self.cgroup {
            match spawn_into_cgroup(spec, cgroup.handle.as_raw_fd()) {
                Ok(started) => return Ok(started),
                Err(Some(error)) => return Err(error),
                Err(None) => {} // clone3 refused: std's spawn instead.
            }
        }
        self.spawn_moved_in(spec)
    }

    /// Starts a command with std's spawn; the child moves itself into the cgroup (and runs
    /// the spec's prelude) between `fork` and `exec`.
    fn spawn_moved_in(&self, spec: &Spec<'_>) -> io::Result<Started> {
        let mut join_cgroup = self.child_setup();
        let die_with_parent = spec.die_with_parent;
        let prelude = spec.raw_prelude()?;
        let mut command = std::process::Command::new(&spec.argv[0]);
        command
            .args(&spec.argv[1..])
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(if spec.piped_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for variable in pflow_llm::CREDENTIAL_VARIABLES {
            if !spec.env.iter().any(|(k, _)| k == variable) {
                command.env_remove(variable);
            }
        }
        if let Some(cwd) = spec.cwd {
            command.current_dir(cwd);
        }
        // SAFETY: the hook only makes async-signal-safe calls (write(2), prctl(2), and the
        // prelude's unshare(2), mount(2) and dup2(2)).
        unsafe {
            command.pre_exec(move || {
                join_cgroup()?;
                if die_with_parent {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                }
                match &prelude {
                    Some(prelude) => prelude.apply(),
                    None => Ok(()),
                }
            });
        }
        let mut child = command.spawn()?;
        let pipe = |fd: Option<OwnedFd>| fd.map(File::from);
        Ok(Started {
            pid: child.id() as libc::pid_t,
            stdin: pipe(child.stdin.take().map(OwnedFd::from)),
            stdout: pipe(child.stdout.take().map(OwnedFd::from)).expect("stdout was piped"),
            stderr: pipe(child.stderr.take().map(OwnedFd::from)).expect("stderr was piped"),
        })
    }

    /// What a child started by std runs between `fork` and `exec`: it joins the cgroup, so
    /// that nothing it starts can escape. Only async-signal-safe calls happen in there.
    pub fn child_setup(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let procs = self.cgroup.as_ref().map(|c| c.procs.as_raw_fd());
        move || {
            if let Some(fd) = procs {
                // SAFETY: write(2) on a descriptor the parent keeps open until after the spawn;
                // "0" moves the writing process itself.
                if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        }
    }

    /// Kills the process group `leader` made and, with a cgroup, everything else it started.
    pub fn kill(&self, leader: libc::pid_t) {
        // SAFETY: kill(2) on the process group the command was started in; ESRCH when it is
        // gone already.
        unsafe {
            libc::kill(-leader, libc::SIGKILL);
        }
        if let Some(cgroup) = &self.cgroup {
            if std::fs::write(cgroup.dir.join("cgroup.kill"), "1").is_err() {
                // Kernels before 5.14 have no cgroup.kill: signal every member instead.
                kill_members(&cgroup.dir);
            }
        }
    }
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement::new()
    }
}

impl Drop for Confinement {
    fn drop(&mut self) {
        let Some(cgroup) = &self.cgroup else { return };
        live_cgroups().remove(&cgroup.dir);
        // A cgroup can only be removed once it is empty; killed processes take a moment.
        let until = Instant::now() + EMPTY_WAIT;
        loop {
            match std::fs::remove_dir(&cgroup.dir) {
                Ok(()) => return,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < until => {
                    let _ = std::fs::write(cgroup.dir.join("cgroup.kill"), "1");
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => {
                    tracing::warn!("cannot remove cgroup {}: {e}", cgroup.dir.display());
                    return;
                }
            }
        }
    }
}

/// The cgroups of this process that may still hold processes.
fn live_cgroups() -> std::sync::MutexGuard<'static, HashSet<PathBuf>> {
    static LIVE: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Kills every process in every live cgroup, for a host that is about to exit at once (a
/// second Ctrl-C) and will not run its destructors.
pub fn kill_everything() {
    for dir in live_cgroups().iter() {
        if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
            kill_members(dir);
        }
    }
}

fn kill_members(dir: &Path) {
    let Ok(members) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in members.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        // SAFETY: kill(2) on a member of the cgroup this module made.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// This process's cgroup v2 directory, when it can hold children; looked up once.
/// `PFLOW_NO_CGROUP` turns cgroups off, to measure or test the process-group fallback.
fn own_cgroup_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if std::env::var_os("PFLOW_NO_CGROUP").is_some() {
            return None;
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let mount = cgroup2_mount(&mountinfo)?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let relative = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        let dir = mount.join(relative.trim().trim_start_matches('/'));
        if !dir.is_dir() {
            return None;
        }
        sweep_orphans(&dir);
        Some(dir)
    })
    .as_deref()
}

/// Kills and removes the cgroups of hosts that died without cleaning up (SIGKILL runs no
/// handler): `pflow-<pid>-<n>` whose host process is gone.
fn sweep_orphans(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("pflow-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let dir = entry.path();
            if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
                kill_members(&dir);
            }
            for _ in 0..50 {
                if std::fs::remove_dir(&dir).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            tracing::info!("killed what a host that died left in {}", dir.display());
        }
    }
}

/// The mount point of the cgroup2 file system, from `/proc/self/mountinfo`.
fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, filesystem) = line.split_once(" - ")?;
        if filesystem.split_whitespace().next() != Some("cgroup2") {
            return None;
        }
        mount.split_whitespace().nth(4).map(PathBuf::from)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn both_ways_of_starting_a_command_put_it_in_the_cgroup() {
        let confinement = Confinement::new();
        let argv = [
            "sh",
            "-c",
            "cat /proc/self/cgroup; echo $PFLOW_CONFINE_TEST",
        ]
        .map(String::from);
        let env = [("PFLOW_CONFINE_TEST".to_string(), "seen".to_string())];
        let spec = Spec {
            argv: &argv,
            env: &env,
            cwd: Some("/"),
            piped_stdin: false,
            die_with_parent: true,
            prelude: None,
        };
        for started in [confinement.spawn(&spec), confinement.spawn_moved_in(&spec)] {
            let mut started = started.expect("sh starts");
            let mut output = String::new();
            started.stdout.read_to_string(&mut output).unwrap();
            let mut status = 0;
            // SAFETY: waitpid(2) on the child just started.
            unsafe { libc::waitpid(started.pid, &mut status, 0) };
            assert_eq!(status, 0);
            assert!(output.ends_with("seen\n"), "{output}");
            match &confinement.cgroup {
                Some(cgroup) => {
                    let name = cgroup.dir.file_name().unwrap().to_string_lossy();
                    assert!(output.contains(&*name), "not in {name}: {output}");
                }
                // Without cgroup v2 (not on this project's machines) only the group is shared.
                None => assert!(!output.contains("pflow-"), "{output}"),
            }
        }
        let missing = ["no-such-program-here".to_string()];
        let error = confinement
            .spawn(&Spec {
                argv: &missing,
                ..spec
            })
            .err()
            .expect("a missing program is an error");
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn the_cgroup2_mount_is_found_among_v1_hierarchies() {
        let mountinfo = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(cgroup2_mount("22 27 0:21 / /proc rw - proc proc rw"), None);
    }
}

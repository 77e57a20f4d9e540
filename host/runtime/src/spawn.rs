//! Starting a command directly inside its cgroup.
//!
//! Moving a process into a cgroup (writing to `cgroup.procs`) waits for an RCU grace period,
//! about 2 ms here, which is most of what a short command costs. `clone3` with
//! `CLONE_INTO_CGROUP` (Linux 5.7+) creates the child in the cgroup instead, and costs nothing
//! extra. std cannot do that, so this module forks and execs itself; [`crate::confine`] falls
//! back to std's spawn with a join between fork and exec where `clone3` is refused.
//!
//! Between `clone3` and `execve` the child only makes async-signal-safe system calls on memory
//! prepared before the fork.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// What the child sets up before it execs, for a dry command's launcher: a mount namespace of
/// its own with the overlay mounted (no `unshare`, shell and `mount` processes to start), and
/// descriptors handed over at fixed numbers.
#[derive(Default)]
pub struct Prelude {
    /// `(mount point, options)` of an overlayfs to mount in a new, private mount namespace.
    pub overlay: Option<(CString, CString)>,
    /// Files to pass as descriptors with these numbers (above 2).
    pub fds: Vec<(File, RawFd)>,
}

impl Prelude {
    /// The raw form the child uses, with every source descriptor moved above the targets so
    /// that no `dup2` overwrites a source still to be used.
    fn raw(&self) -> io::Result<RawPrelude> {
        let above = self.fds.iter().map(|(_, to)| *to).max().unwrap_or(2) + 1;
        let fds = self
            .fds
            .iter()
            .map(|(file, to)| {
                // SAFETY: fcntl(2) duplicating a descriptor we own; the copy is closed on exec.
                let from = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, above) };
                if from < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: `from` was just created and is owned by nothing else.
                Ok((unsafe { OwnedFd::from_raw_fd(from) }, *to))
            })
            .collect::<io::Result<_>>()?;
        Ok(RawPrelude {
            overlay: self.overlay.clone(),
            fds,
        })
    }
}

/// A prelude ready for the child: its own descriptors, owned until the child has started.
pub struct RawPrelude {
    overlay: Option<(CString, CString)>,
    fds: Vec<(OwnedFd, RawFd)>,
}

impl RawPrelude {
    /// Runs in the child between fork and exec; async-signal-safe calls only.
    ///
    /// # Safety
    /// Only in a freshly forked child, before exec.
    pub unsafe fn apply(&self) -> io::Result<()> {
        if let Some((target, options)) = &self.overlay {
            let check = |result: libc::c_int| {
                if result < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            };
            check(libc::unshare(libc::CLONE_NEWNS))?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                c"overlay".as_ptr(),
                target.as_ptr(),
                c"overlay".as_ptr(),
                0,
                options.as_ptr().cast(),
            ))?;
        }
        for (from, to) in &self.fds {
            if libc::dup2(from.as_raw_fd(), *to) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// What to start.
pub struct Spec<'a> {
    pub argv: &'a [String],
    /// Variables set on top of the host's environment.
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a str>,
    /// A pipe for stdin, or /dev/null.
    pub piped_stdin: bool,
    /// Kill the child when the spawning thread's process dies.
    pub die_with_parent: bool,
    pub prelude: Option<&'a Prelude>,
}

impl Spec<'_> {
    pub fn raw_prelude(&self) -> io::Result<Option<RawPrelude>> {
        self.prelude.map(Prelude::raw).transpose()
    }
}

/// A started child: its pid (our child, to be reaped with waitpid) and our ends of its pipes.
pub struct Started {
    pub pid: libc::pid_t,
    pub stdin: Option<File>,
    pub stdout: File,
    pub stderr: File,
}

/// The kernel's `struct clone_args`.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Starts `spec` as a child of this process inside the cgroup `cgroup_dir` (a directory
/// descriptor). Errors from `clone3` itself come back as `Err(None)`, so that the caller can
/// fall back; errors of the command (not found, bad cwd) as `Err(Some(error))`.
pub fn spawn_into_cgroup(spec: &Spec<'_>, cgroup_dir: RawFd) -> Result<Started, Option<io::Error>> {
    let program = resolve_program(&spec.argv[0], spec.env).map_err(Some)?;
    let program = CString::new(program.into_os_string().into_vec()).map_err(|e| Some(e.into()))?;
    let argv = c_strings(spec.argv.iter().map(|a| a.as_bytes().to_vec())).map_err(Some)?;
    let envp = c_strings(environment(spec.env)).map_err(Some)?;
    let cwd = spec
        .cwd
        .map(|cwd| CString::new(cwd).map_err(io::Error::from))
        .transpose()
        .map_err(Some)?;
    let argv_ptrs = null_terminated(&argv);
    let envp_ptrs = null_terminated(&envp);
    let prelude = spec.raw_prelude().map_err(Some)?;

    let (stdin_child, stdin_ours) = if spec.piped_stdin {
        let (read, write) = pipe().map_err(Some)?;
        (read, Some(write))
    } else {
        let null = File::open("/dev/null").map_err(Some)?;
        (OwnedFd::from(null), None)
    };
    let (stdout_ours, stdout_child) = pipe().map_err(Some)?;
    let (stderr_ours, stderr_child) = pipe().map_err(Some)?;
    let (errors_ours, errors_child) = pipe().map_err(Some)?;

    let mut args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup_dir as u64,
        ..CloneArgs::default()
    };
    // SAFETY: clone3 without CLONE_VM is a fork: the child gets a copy of this thread's memory
    // and only runs `exec_child`, which makes async-signal-safe calls and never returns.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid < 0 {
        return Err(None);
    }
    if pid == 0 {
        // SAFETY: in the child, on descriptors and strings prepared above.
        unsafe {
            exec_child(
                &ChildFds {
                    stdin: stdin_child.as_raw_fd(),
                    stdout: stdout_child.as_raw_fd(),
                    stderr: stderr_child.as_raw_fd(),
                    errors: errors_child.as_raw_fd(),
                },
                &program,
                &argv_ptrs,
                &envp_ptrs,
                cwd.as_ref(),
                spec.die_with_parent,
                prelude.as_ref(),
            )
        }
    }
    let pid = pid as libc::pid_t;
    drop((stdin_child, stdout_child, stderr_child, errors_child));
    // The error pipe closes on a successful exec (it is close-on-exec); otherwise it carries
    // the errno of what failed.
    let mut errno = [0u8; 4];
    let mut errors = File::from(errors_ours);
    if let Ok(4) = read_fully(&mut errors, &mut errno) {
        // SAFETY: waitpid(2) on the child that just failed to exec.
        unsafe {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return Err(Some(io::Error::from_raw_os_error(i32::from_ne_bytes(
            errno,
        ))));
    }
    Ok(Started {
        pid,
        stdin: stdin_ours.map(File::from),
        stdout: File::from(stdout_ours),
        stderr: File::from(stderr_ours),
    })
}

struct ChildFds {
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    errors: RawFd,
}

/// The child's side: wire up stdio, its own process group, default signals, exec.
unsafe fn exec_child(
    fds: &ChildFds,
    program: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    cwd: Option<&CString>,
    die_with_parent: bool,
    prelude: Option<&RawPrelude>,
) -> ! {
    let fail = || -> ! {
        let errno = *libc::__errno_location();
        libc::write(fds.errors, errno.to_ne_bytes().as_ptr().cast(), 4);
        libc::_exit(127)
    };
    for (from, to) in [(fds.stdin, 0), (fds.stdout, 1), (fds.stderr, 2)] {
        if libc::dup2(from, to) < 0 {
            fail();
        }
    }
    // Its own group, so that the terminal's Ctrl-C reaches the host, which ends it.
    if libc::setpgid(0, 0) < 0 {
        fail();
    }
    if die_with_parent {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    if let Some(prelude) = prelude {
        if prelude.apply().is_err() {
            fail();
        }
    }
    if let Some(cwd) = cwd {
        if libc::chdir(cwd.as_ptr()) < 0 {
            fail();
        }
    }
    // The host ignores SIGPIPE (as every Rust program does) and handles Ctrl-C; an ignored
    // signal stays ignored across exec, so reset what the command must see as usual.
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
    fail()
}

/// The program as execve needs it: a path, found on PATH (the command's own, if it sets one)
/// when the name has no slash, as `execvp` would.
fn resolve_program(name: &str, env: &[(String, String)]) -> io::Result<PathBuf> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let path = env
        .iter()
        .rev()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| OsString::from(value))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The host's environment without its LLM credentials, with `extra` set on top, as
/// `KEY=VALUE` byte strings.
fn environment(extra: &[(String, String)]) -> Vec<Vec<u8>> {
    let withheld = |key: &OsStr| {
        pflow_llm::CREDENTIAL_VARIABLES
            .iter()
            .any(|v| OsStr::new(v) == key)
    };
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(key, _)| !withheld(key) && !extra.iter().any(|(k, _)| OsStr::new(k) == key))
        .collect();
    vars.extend(extra.iter().map(|(k, v)| (k.into(), v.into())));
    vars.into_iter()
        .map(|(key, value)| {
            let mut pair = key.into_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            pair
        })
        .collect()
}

fn c_strings(items: impl IntoIterator<Item = Vec<u8>>) -> io::Result<Vec<CString>> {
    items
        .into_iter()
        .map(|bytes| CString::new(bytes).map_err(io::Error::from))
        .collect()
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) fills both descriptors, which are then owned here.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn read_fully(file: &mut File, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

//! The seccomp filters of a dry command, on top of its namespaces and dropped capabilities:
//! system calls that only serve to leave or reshape a sandbox (mounts, namespaces, tracing,
//! kernel modules, kexec, BPF, keyrings) fail with EPERM, and so does `clone` with a
//! namespace flag. `clone3` fails with ENOSYS, so that C libraries fall back to `clone`,
//! whose flags a filter can see.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const REFUSED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_syslog,
    libc::SYS_acct,
];

const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// The filters as raw BPF programs (arrays of `struct sock_filter`), the form bubblewrap's
/// `--add-seccomp-fd` reads; none on an architecture seccompiler does not know.
pub(crate) fn filters() -> Option<&'static [Vec<u8>; 2]> {
    static FILTERS: OnceLock<Option<[Vec<u8>; 2]>> = OnceLock::new();
    FILTERS
        .get_or_init(|| match build() {
            Ok(filters) => Some(filters),
            Err(e) => {
                tracing::warn!("dry commands run without a seccomp filter: {e}");
                None
            }
        })
        .as_ref()
}

fn build() -> Result<[Vec<u8>; 2], seccompiler::BackendError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&call| (call, Vec::new())).collect();
    let namespace_flag = |flag: libc::c_int| {
        let flag = flag as u64;
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .and_then(|condition| SeccompRule::new(vec![condition]))
    };
    refused.insert(
        libc::SYS_clone,
        NAMESPACE_FLAGS
            .iter()
            .map(|&flag| namespace_flag(flag))
            .collect::<Result<_, _>>()?,
    );
    let deny = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let no_clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    Ok([raw(deny.try_into()?), raw(no_clone3.try_into()?)])
}

fn raw(program: BpfProgram) -> Vec<u8> {
    program
        .iter()
        .flat_map(|instruction| {
            let mut bytes = Vec::with_capacity(8);
            bytes.extend_from_slice(&instruction.code.to_ne_bytes());
            bytes.push(instruction.jt);
            bytes.push(instruction.jf);
            bytes.extend_from_slice(&instruction.k.to_ne_bytes());
            bytes
        })
        .collect()
}

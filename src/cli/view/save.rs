//! Where the page's saves go, reached without following links: the directory is opened
//! once when the viewer starts, and every save walks from it with `openat(2)` and
//! `O_NOFOLLOW`, one directory at a time. A directory on the way swapped for a link
//! (before the first save or between two) makes the save fail instead of writing
//! elsewhere; the file is replaced through a temporary file and `renameat(2)` in the
//! directory the walk reached, keeping the mode of the file it replaces.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// A directory opened once; saves go below it.
pub struct SaveRoot {
    dir: OwnedFd,
}

impl SaveRoot {
    /// Opens `dir` (links in `dir` itself are followed: the person named it).
    pub fn open(dir: &Path) -> io::Result<SaveRoot> {
        let name = c_path(dir.as_os_str())?;
        // SAFETY: a valid NUL-terminated path; the descriptor returned is ours.
        let fd = unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        Ok(SaveRoot { dir: owned(fd)? })
    }

    /// Whether `relative` names anything (a link included), links on the way refused.
    pub fn exists(&self, relative: &Path) -> io::Result<bool> {
        let (dir, name) = self.walk(relative, false)?;
        let Some(dir) = dir else {
            return Ok(false);
        };
        let name = c_path(name)?;
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: valid descriptor and name; fstatat fills `stat`.
        let found = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if found == 0 {
            return Ok(true);
        }
        match io::Error::last_os_error() {
            error if error.kind() == io::ErrorKind::NotFound => Ok(false),
            error => Err(error),
        }
    }

    /// Writes `bytes` to `relative` (directories only, then the file name; `.` allowed),
    /// making missing directories when `make_dirs`. The file is replaced whole, or not at
    /// all; an existing file's mode is kept.
    pub fn write(&self, relative: &Path, bytes: &[u8], make_dirs: bool) -> io::Result<()> {
        let (dir, name) = self.walk(relative, make_dirs)?;
        let dir = dir.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let mode = existing_mode(&dir, name)?.unwrap_or(0o666);
        let (temporary, mut file) = create_temporary(&dir, mode)?;
        let written = file.write_all(bytes).and_then(|()| {
            // The mode asked for at creation went through the umask; a kept mode must not.
            fchmod(&file, mode)
        });
        let renamed = written.and_then(|()| {
            let (from, to) = (c_path(temporary.as_os_str())?, c_path(name)?);
            // SAFETY: valid descriptors and names.
            let result = unsafe {
                libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr())
            };
            check(result)
        });
        if renamed.is_err() {
            if let Ok(from) = c_path(temporary.as_os_str()) {
                // SAFETY: valid descriptor and name.
                unsafe { libc::unlinkat(dir.as_raw_fd(), from.as_ptr(), 0) };
            }
        }
        renamed
    }

    /// The directory holding `relative`'s last component, reached from the root one
    /// directory at a time without following links (`None`: a directory on the way is
    /// missing and `make_dirs` is off), and that last component.
    fn walk<'p>(
        &self,
        relative: &'p Path,
        make_dirs: bool,
    ) -> io::Result<(Option<OwnedFd>, &'p OsStr)> {
        let mut parts: Vec<&OsStr> = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not below the directory",
                    ))
                }
            }
        }
        let name = parts
            .pop()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        // SAFETY: dup of a descriptor we own.
        let mut dir =
            owned(unsafe { libc::fcntl(self.dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        for part in parts {
            let part = c_path(part)?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: valid descriptor and name.
            let mut fd = unsafe { libc::openat(dir.as_raw_fd(), part.as_ptr(), flags) };
            if fd < 0 && io::Error::last_os_error().kind() == io::ErrorKind::NotFound {
                if !make_dirs {
                    return Ok((None, name));
                }
                // SAFETY: valid descriptor and name.
                let made = unsafe { libc::mkdirat(dir.as_raw_fd(), part.as_ptr(), 0o777) };
                if made != 0 && io::Error::last_os_error().kind() != io::ErrorKind::AlreadyExists {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: as above.
                fd = unsafe { libc::openat(dir.as_raw_fd(), part.as_ptr(), flags) };
            }
            dir = owned(fd).map_err(link_refused)?;
        }
        Ok((Some(dir), name))
    }
}

/// ELOOP and ENOTDIR from `O_NOFOLLOW | O_DIRECTORY` mean a link (or a file) where a
/// directory was expected: say so.
fn link_refused(error: io::Error) -> io::Error {
    match error.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a directory on the way is a link or not a directory: saves do not follow links",
        ),
        _ => error,
    }
}

/// The permission bits of `name` in `dir` if it is a regular file (not followed if a link).
fn existing_mode(dir: &OwnedFd, name: &OsStr) -> io::Result<Option<u32>> {
    let name = c_path(name)?;
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid descriptor and name; fstatat fills `stat` when it returns 0.
    let found = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            stat.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if found != 0 {
        return Ok(None);
    }
    // SAFETY: fstatat returned 0.
    let stat = unsafe { stat.assume_init() };
    let is_file = stat.st_mode & libc::S_IFMT == libc::S_IFREG;
    // mode_t is u32 on Linux, u16 elsewhere.
    #[allow(clippy::unnecessary_cast)]
    let mode = stat.st_mode as u32 & 0o7777;
    Ok(is_file.then_some(mode))
}

/// A new file `.tmpXXXXXX` in `dir`, created exclusively (never through a link).
fn create_temporary(dir: &OwnedFd, mode: u32) -> io::Result<(std::ffi::OsString, File)> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id()) << 32;
    for attempt in 0..64u64 {
        let name = format!(
            ".tmp{:06x}",
            (seed.wrapping_add(attempt.wrapping_mul(0x9E37_79B9))) & 0xFF_FFFF
        );
        let c_name = c_path(OsStr::new(&name))?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid descriptor and name.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), c_name.as_ptr(), flags, mode & 0o666) };
        match owned(fd) {
            Ok(fd) => return Ok((name.into(), File::from(fd))),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name",
    ))
}

fn fchmod(file: &File, mode: u32) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    check(unsafe { libc::fchmod(file.as_raw_fd(), mode as libc::mode_t) })
}

fn c_path(part: &OsStr) -> io::Result<CString> {
    CString::new(part.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned to us, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn saves_make_directories_keep_the_mode_and_never_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = SaveRoot::open(dir.path()).unwrap();
        let file = Path::new("./shaders/a.shdr");
        assert!(!root.exists(file).unwrap());
        root.write(file, b"one", true).unwrap();
        let on_disk = dir.path().join("shaders/a.shdr");
        assert_eq!(std::fs::read(&on_disk).unwrap(), b"one");
        std::fs::set_permissions(&on_disk, std::fs::Permissions::from_mode(0o400)).unwrap();
        root.write(file, b"two", false).unwrap();
        assert_eq!(std::fs::read(&on_disk).unwrap(), b"two");
        let mode = std::fs::metadata(&on_disk).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o400);
        // The directory swapped for a link to elsewhere: refused, nothing written there.
        std::fs::rename(dir.path().join("shaders"), dir.path().join("old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("shaders")).unwrap();
        let error = root.write(file, b"three", true).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
        assert!(root.exists(file).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // No temporary file left anywhere.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("old"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.shdr"]);
    }
}

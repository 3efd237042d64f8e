//! Reading files whose paths come from input (a scene's MTL and textures, `#include`s,
//! `.mem` files, programs to disassemble, images to compare or merge): only regular files.
//!
//! A path can name a device (`/dev/zero` never ends), a FIFO (opening one blocks until a
//! writer comes, reading it until the writer goes) or a directory. [`read`] opens without
//! blocking, checks what the open file is, and refuses anything but a regular file with a
//! message that says what it is, so such a path is an error, not a hang or an exhausted
//! memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Files at least this long are read in pieces on all threads ([`read_in_pieces`]).
const PARALLEL_READ_BYTES: u64 = 8 << 20;
/// The bytes each thread reads at a time.
const READ_PIECE: usize = 1 << 20;

/// The bytes of the regular file at `path` (links followed). A large file is read in
/// pieces on all threads: copying a 50 MB OBJ out of the page cache into fresh pages took
/// 21 ms on one thread, the largest serial step of its load.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let (mut file, len) = open_with_len(path)?;
    let mut bytes = Vec::new();
    if len >= PARALLEL_READ_BYTES {
        if let Some(pieces) = read_in_pieces(&file, len)? {
            bytes = pieces;
            file.seek(SeekFrom::Start(len))?;
        }
    }
    // All of a small file; what a large one grew by while it was read.
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The first `len` bytes of `file`, each piece of [`READ_PIECE`] bytes read at its offset
/// on a thread of its own; `None` where the file turns out shorter (it shrank after its
/// length was taken: [`read`] then reads it whole on one thread) or the platform cannot
/// read at an offset.
fn read_in_pieces(file: &File, len: u64) -> io::Result<Option<Vec<u8>>> {
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        // A length no allocation can hold is read (and refused) as a small file is.
        let Some(mut bytes) = zeroed(len) else {
            return Ok(None);
        };
        let read = bytes
            .par_chunks_mut(READ_PIECE)
            .enumerate()
            .try_for_each(|(k, piece)| file.read_exact_at(piece, (k * READ_PIECE) as u64));
        match read {
            Ok(()) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, len);
        Ok(None)
    }
}

/// `len` zero bytes, or `None` where the allocator cannot give them (a sparse file can
/// claim any length: `vec![0; len]` would abort the process there). The pages of a large
/// allocation are mapped lazily, so each thread faults in those it fills.
#[cfg(unix)]
fn zeroed(len: usize) -> Option<Vec<u8>> {
    let layout = std::alloc::Layout::array::<u8>(len).ok()?;
    if len == 0 {
        return Some(Vec::new());
    }
    // SAFETY: the layout's size is not zero. A non-null pointer from `alloc_zeroed` points
    // to `len` initialised bytes allocated by the global allocator with the layout of
    // `len` u8s, which is what `Vec::from_raw_parts` needs to own them.
    unsafe {
        let pointer = std::alloc::alloc_zeroed(layout);
        (!pointer.is_null()).then(|| Vec::from_raw_parts(pointer, len, len))
    }
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// The regular file at `path`, open for reading.
pub fn open(path: &Path) -> io::Result<File> {
    Ok(open_with_len(path)?.0)
}

/// [`open`], with the file's length from the same look at what it is.
fn open_with_len(path: &Path) -> io::Result<(File, u64)> {
    let file = open_without_blocking(path)?;
    let metadata = file.metadata()?;
    if !metadata.file_type().is_file() {
        return Err(not_regular(&metadata.file_type()));
    }
    Ok((file, metadata.len()))
}

/// Opens `path` so that a FIFO without a writer does not block the open (`O_NONBLOCK`,
/// which changes nothing for the regular files this module goes on to read).
#[cfg(unix)]
fn open_without_blocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// The error for a file that is not a regular one, naming what it is.
fn not_regular(kind: &std::fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({})", kind_name(kind)),
    )
}

fn kind_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// What identifies the file `path` names, however it is spelled: the device and inode
/// (`None` when it cannot be read). Two spellings of one file (`./x.png`, `a/../x.png`, a
/// link) give the same key.
pub fn file_key(path: &Path) -> Option<(u64, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((metadata.dev(), metadata.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        let canonical = path.canonicalize().ok()?;
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        canonical.hash(&mut hasher);
        Some((0, hasher.finish()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_reads_and_everything_else_is_refused_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "text").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "text");
        let refused = |path: &Path| read(path).unwrap_err().to_string();
        assert_eq!(refused(dir.path()), "not a regular file (a directory)");
        #[cfg(unix)]
        {
            assert_eq!(
                refused(Path::new("/dev/zero")),
                "not a regular file (a character device)"
            );
            let fifo = dir.path().join("fifo");
            let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
            // No writer: a blocking open would never return.
            assert_eq!(refused(&fifo), "not a regular file (a FIFO)");
        }
        assert_eq!(
            read(&dir.path().join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn a_large_file_read_in_pieces_is_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("large.bin");
        // Not a whole number of pieces, and no piece like its neighbours.
        let len = PARALLEL_READ_BYTES as usize + READ_PIECE / 2 + 7;
        let bytes: Vec<u8> = (0..len).map(|k| (k * 7 + k / 4093) as u8).collect();
        std::fs::write(&file, &bytes).unwrap();
        assert!(read(&file).unwrap() == bytes);
        let mut opened = File::open(&file).unwrap();
        assert!(read_in_pieces(&opened, len as u64).unwrap().unwrap() == bytes);
        // No allocation holds this: refused, not aborted (`read` then reports it).
        assert_eq!(zeroed(usize::MAX >> 1), None);
        assert_eq!(zeroed(3), Some(vec![0; 3]));
        // A file shorter than its length said: read again whole, by `read`.
        assert_eq!(read_in_pieces(&opened, len as u64 + 1).unwrap(), None);
        let mut rest = Vec::new();
        opened.read_to_end(&mut rest).unwrap();
        assert_eq!(
            rest.len(),
            len,
            "pieces read at offsets leave the position at 0"
        );
    }

    #[test]
    fn two_spellings_of_one_file_have_one_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("x.png"), "x").unwrap();
        std::fs::write(dir.path().join("y.png"), "x").unwrap();
        let key = |p: &str| file_key(&dir.path().join(p));
        assert!(key("x.png").is_some());
        assert_eq!(key("x.png"), key("./././x.png"));
        assert_eq!(key("x.png"), key("sub/../x.png"));
        assert_ne!(key("x.png"), key("y.png"));
        assert_eq!(key("missing.png"), None);
    }
}

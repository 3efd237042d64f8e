//! The viewer's HTTP layer, built for clients that do not play fair: hyper's HTTP/1 server
//! on a single-threaded tokio runtime, so an open connection or an event stream costs a
//! task (a few KiB), never a thread, and nothing a client sends is read unless asked for.
//!
//! - Headers: at most [`MAX_HEADER_BYTES`] (hyper answers 431 and closes past that), read
//!   within [`HEADER_TIMEOUT`] of the connection opening; one request per connection
//!   (no keep-alive), so a connection that has been answered holds nothing.
//! - Connections: at most [`max_connections`] open. A new one beyond that takes the place of
//!   the oldest connection that has not finished sending its request (idle or slow), so
//!   a crowd of idle connections cannot keep a page from being served; when every
//!   connection is busy with a request, the new one gets a 503 at once and is closed. A
//!   connection is pushed out only after [`GRACE`]: until then newcomers wait in the
//!   kernel's queue, so a flood cannot push out a client that is a moment late with its
//!   request.
//! - Writes: a client that stops reading an answer is dropped after [`WRITE_STALL`].
//! - Accept errors (out of descriptors) pause accepting briefly; the listener stays.
//!
//! Bodies are the handler's business ([`read_body`]: a declared length is checked before
//! any byte is read, and the whole body must come within [`BODY_TIMEOUT`]).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::{sleep, Instant, Sleep};

/// Request line and headers together, in bytes.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// How long a connection may take to send its request line and headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request may take to send its (small) body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write may wait for a client that does not read.
pub const WRITE_STALL: Duration = Duration::from_secs(10);
/// Most connections open at once, whatever the descriptor limit.
const CONNECTIONS_CEILING: usize = 512;
/// How long a connection has, at least, to send its request before a newcomer may take
/// its place. Without it a flood of idle connections accepted at thousands a second
/// pushed out a page's connection whose request came a few milliseconds after its
/// connect (a busy machine: 1 run of 5 of the idle-connections test with two CPU-bound
/// processes beside it).
const GRACE: Duration = Duration::from_millis(250);
/// Descriptors kept for everything else (files, the watcher, the render's threads).
const DESCRIPTORS_KEPT: u64 = 64;

/// The connection cap: [`CONNECTIONS_CEILING`], or less when the descriptor limit
/// (`ulimit -n`) leaves less room, so accepting never runs the process out of descriptors.
pub fn max_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    // rlim_t is u64 on Linux, not everywhere.
    #[allow(clippy::unnecessary_cast)]
    let room = if known {
        (limit.rlim_cur as u64).saturating_sub(DESCRIPTORS_KEPT) / 2
    } else {
        CONNECTIONS_CEILING as u64
    };
    (room as usize).clamp(16, CONNECTIONS_CEILING)
}

/// Connections the kernel queues before the server takes them (std listens with 128):
/// while the machine is busy, a burst of a thousand connections must not fill the queue,
/// or the next page's connection waits out a SYN retry (a second or more).
const BACKLOG: libc::c_int = 4096;

/// Listens again with [`BACKLOG`] (Linux takes a second `listen(2)` as a new backlog;
/// the kernel caps it at `net.core.somaxconn`).
pub fn deepen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: a listening socket we own; listen(2) only changes its queue length.
    unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) };
}

/// An answer's body: bytes at once, or a stream of server-sent events.
pub enum Reply {
    Bytes(Option<Bytes>),
    Events(Pin<Box<dyn Body<Data = Bytes, Error = Infallible> + Send>>),
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Reply::Bytes(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Reply::Events(events) => events.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Reply::Bytes(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Reply::Bytes(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Reply::Events(_) => SizeHint::default(),
        }
    }
}

/// Why a body was not read.
pub enum BodyError {
    /// Declared or sent longer than allowed.
    TooLarge,
    /// Not all of it came within [`BODY_TIMEOUT`].
    TooSlow,
    /// The connection failed.
    Broken,
}

/// The request's body, at most `limit` bytes: a declared `Content-Length` over the limit
/// is refused before reading anything, and the body must arrive within [`BODY_TIMEOUT`].
pub async fn read_body(request: Request<Incoming>, limit: usize) -> Result<Vec<u8>, BodyError> {
    if declared_length(&request).is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut body = request.into_body();
    let mut bytes = Vec::new();
    let read = async {
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            let frame = frame.map_err(|_| BodyError::Broken)?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > limit {
                    return Err(BodyError::TooLarge);
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(())
    };
    match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(result) => result.map(|()| bytes),
        Err(_) => Err(BodyError::TooSlow),
    }
}

/// The `Content-Length` a request declares (`u64::MAX` for one that does not parse).
fn declared_length(request: &Request<Incoming>) -> Option<u64> {
    let value = request.headers().get(hyper::header::CONTENT_LENGTH)?;
    Some(
        value
            .to_str()
            .map_or(u64::MAX, theia::tools::viewer::declared_length),
    )
}

/// Connections that have not yet sent a whole request, oldest first (with when each was
/// accepted): the ones a new connection may replace when the cap is reached.
struct Connections {
    open: usize,
    next_id: u64,
    waiting: VecDeque<(u64, Instant, Arc<Notify>)>,
}

impl Connections {
    fn started(&mut self, id: u64) {
        self.waiting.retain(|(waiting, _, _)| *waiting != id);
    }

    /// At the cap, how long until the oldest connection still sending its request has had
    /// its [`GRACE`] (`None`: there is room, or it has had it, or every connection is
    /// busy with a request and a newcomer is refused at once).
    fn grace_left(&self, cap: usize) -> Option<Duration> {
        if self.open < cap {
            return None;
        }
        let (_, accepted, _) = self.waiting.front()?;
        GRACE
            .checked_sub(accepted.elapsed())
            .filter(|left| !left.is_zero())
    }
}

/// Accepts connections on `listener` and answers each request with `handle`, until
/// `stop` is notified.
pub async fn serve<H, F>(listener: TcpListener, handle: H, stop: Arc<Notify>)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Reply>> + Send + 'static,
{
    let cap = max_connections();
    let connections = Arc::new(Mutex::new(Connections {
        open: 0,
        next_id: 0,
        waiting: VecDeque::new(),
    }));
    loop {
        // Newcomers wait in the kernel's queue while every connection that could make
        // room is within its grace (checked again as connections close).
        let grace = lock(&connections).grace_left(cap);
        if let Some(left) = grace {
            tokio::select! {
                () = sleep(left.min(Duration::from_millis(10))) => continue,
                () = stop.notified() => return,
            }
        }
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.notified() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors (EMFILE) or a connection reset before it was taken:
                // the listener stays; give connections a moment to close.
                sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (id, evict) = {
            let mut table = lock(&connections);
            if table.open >= cap {
                match table.waiting.pop_front() {
                    // The oldest connection still sending its request makes room.
                    Some((_, _, oldest)) => oldest.notify_one(),
                    None => {
                        drop(table);
                        refuse(stream);
                        continue;
                    }
                }
            }
            table.open += 1;
            table.next_id += 1;
            let id = table.next_id;
            let evict = Arc::new(Notify::new());
            table.waiting.push_back((id, Instant::now(), evict.clone()));
            (id, evict)
        };
        let (handle, connections) = (handle.clone(), connections.clone());
        tokio::spawn(async move {
            connection(stream, id, evict, handle, &connections).await;
            let mut table = lock(&connections);
            table.started(id);
            table.open -= 1;
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The answer to a connection over the cap when none can make room: sent if the socket
/// takes it at once, never waited for.
fn refuse(stream: TcpStream) {
    let _ = stream.try_write(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
}

/// Serves one connection: its request within [`HEADER_TIMEOUT`] (or until a newer
/// connection takes its place), then the answer.
async fn connection<H, F>(
    stream: TcpStream,
    id: u64,
    evict: Arc<Notify>,
    handle: H,
    connections: &Arc<Mutex<Connections>>,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Reply>> + Send + 'static,
{
    let started = Arc::new(AtomicBool::new(false));
    let service = {
        let (started, connections) = (started.clone(), connections.clone());
        hyper::service::service_fn(move |request| {
            started.store(true, Ordering::SeqCst);
            lock(&connections).started(id);
            let answer = handle(request);
            async move { Ok::<_, Infallible>(answer.await) }
        })
    };
    let io = TokioIo::new(StallGuard::new(stream));
    let served = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .max_header_size(MAX_HEADER_BYTES)
        .max_buf_size(MAX_HEADER_BYTES.max(8192))
        .max_headers(64)
        .serve_connection(io, service);
    tokio::pin!(served);
    let deadline = sleep(HEADER_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let waiting = !started.load(Ordering::SeqCst);
        tokio::select! {
            _ = &mut served => return,
            () = &mut deadline, if waiting => {
                if !started.load(Ordering::SeqCst) {
                    return;
                }
            }
            () = evict.notified(), if waiting => {
                if !started.load(Ordering::SeqCst) {
                    return;
                }
            }
        }
    }
}

/// A connection whose writes fail after [`WRITE_STALL`] without progress, so a client
/// that stops reading cannot hold an answer (or an event stream) open.
struct StallGuard {
    stream: TcpStream,
    stalled_since: Option<Pin<Box<Sleep>>>,
}

impl StallGuard {
    fn new(stream: TcpStream) -> StallGuard {
        StallGuard {
            stream,
            stalled_since: None,
        }
    }

    /// After a write that made no progress: an error once it has waited too long.
    fn check_stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let timer = self.stalled_since.get_or_insert_with(|| {
            Box::pin(tokio::time::sleep_until(Instant::now() + WRITE_STALL))
        });
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for StallGuard {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for StallGuard {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Pending => this.check_stall(cx),
            done => {
                this.stalled_since = None;
                done
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_write_vectored(cx, bufs) {
            Poll::Pending => this.check_stall(cx),
            done => {
                this.stalled_since = None;
                done
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

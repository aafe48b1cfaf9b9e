//! The I/O threads: they store the files the writer thread assembled. Each job's puts are
//! first written ([`BlockingStore::stage`]; on local disk a temporary file, while another
//! I/O thread writes the next job's), then published in the job's turn ([`Turns`]), in the
//! order the writer sent the jobs: an events file is visible before its index file, and
//! steps appear in order.

use crate::error::WriterError;
use crate::priority::WriterPriority;
use crate::stats::Shared;
use smdebug_storage::{BlockingStore, Bytes};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// One object for the I/O thread to store.
pub(crate) struct Put {
    /// The store to put it in.
    pub store: Arc<BlockingStore>,
    /// Its key there.
    pub key: String,
    /// Its bytes.
    pub data: Bytes,
    /// Its size when it is an events file (counted in [`Shared::event_bytes`]), else 0.
    pub event_bytes: u64,
}

/// Work for the I/O threads, numbered in the order the writer sent it: its puts become
/// visible in that order.
enum IoJob {
    /// The puts a job of the writer produced (a step's events file, then its index file and
    /// TensorBoard files), in order: one message, so one wake-up of an I/O thread per step.
    Puts(Vec<Put>),
    /// Reply once every put before this one is done.
    Flush(SyncSender<()>),
}

/// Whose turn it is to publish: the I/O threads publish jobs strictly in their numbers'
/// order, whatever order they finish writing them in.
#[derive(Default)]
struct Turns {
    /// The number of the next job to publish.
    next: Mutex<u64>,
    changed: Condvar,
}

impl Turns {
    /// Waits until job `seq` may publish; the returned guard passes the turn on when it is
    /// dropped (also when the thread unwinds, so the other I/O threads never wait forever).
    fn wait(&self, seq: u64) -> Turn<'_> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        while *next != seq {
            next = self.changed.wait(next).unwrap_or_else(|p| p.into_inner());
        }
        Turn { turns: self }
    }
}

/// Job `seq`'s place in the publishing order. Dropped before its turn was waited for (the
/// thread unwinding while it wrote the job's files), it still waits for the turn and passes
/// it on, so the other I/O threads do not wait forever for a job that will never publish.
struct Ticket<'a> {
    turns: &'a Turns,
    seq: u64,
    used: bool,
}

impl<'a> Ticket<'a> {
    /// Waits for the job's turn (see [`Turns::wait`]).
    fn wait(mut self) -> Turn<'a> {
        self.used = true;
        self.turns.wait(self.seq)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            drop(self.turns.wait(self.seq));
        }
    }
}

/// The turn of one job to publish (see [`Turns::wait`]).
struct Turn<'a> {
    turns: &'a Turns,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.turns.next.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.turns.changed.notify_all();
    }
}

/// The bytes from which a job of puts is worth a second I/O thread (see [`IoPool::send`]).
const SPLIT_JOB_BYTES: usize = 1 << 20;

/// The I/O threads to start for `store`: two when its puts can be written before they are
/// published (local disk, [`BlockingStore::stage`]) and there are two cores, else one.
///
/// On local disk a put's cost is the kernel copying the bytes into the page cache and
/// allocating its pages, which one `write` does on one core: a writer publishing megabytes
/// per step would be bound by that one thread. Two threads write two steps' files at once
/// and publish them in order. Object stores publish with one request, which cannot be split
/// that way.
fn io_threads(store: &BlockingStore) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if store.storage().as_sync().is_some() && cores >= 2 {
        2
    } else {
        1
    }
}

/// The writer thread's handle on the I/O threads.
pub(crate) struct IoPool {
    /// The channels to the I/O threads (empty if none could start); which job goes to
    /// which, [`IoPool::send`].
    senders: Vec<SyncSender<(u64, IoJob)>>,
    /// The I/O threads, joined by [`IoPool::stop`].
    threads: Vec<JoinHandle<()>>,
    /// The number of the next job sent to the I/O threads (their publishing order).
    seq: u64,
    /// Jobs of at least [`SPLIT_JOB_BYTES`] sent so far (they take the I/O threads in turn).
    large_jobs: u64,
    /// Events buffers the I/O threads are done with (see [`run_io`]).
    spare: Receiver<Vec<u8>>,
}

impl IoPool {
    /// Starts the I/O threads for `store` (see [`io_threads`]). If none can start, the
    /// failure is recorded in `shared` and every later send fails.
    pub fn start(store: &BlockingStore, shared: &Arc<Shared>, priority: WriterPriority) -> Self {
        let threads = io_threads(store);
        // Each I/O thread has its own channel, so a job wakes only the thread that runs it
        // (which one: `IoPool::send`). Steps in flight (queued or with an I/O thread): three
        // with one thread, four with two; bounded memory, and enough to overlap I/O and
        // encoding.
        let capacity = if threads == 1 { 2 } else { 1 };
        let (spare_tx, spare_rx) = sync_channel(2);
        let turns = Arc::new(Turns::default());
        let mut io_threads = Vec::new();
        let mut senders = Vec::new();
        for _ in 0..threads {
            let (tx, jobs) = sync_channel(capacity);
            let (io_shared, turns, spare) = (shared.clone(), turns.clone(), spare_tx.clone());
            match std::thread::Builder::new()
                .name("smdebug-hook-io".into())
                .spawn(move || run_io(io_shared, jobs, turns, spare, priority))
            {
                Ok(t) => {
                    io_threads.push(t);
                    senders.push(tx);
                }
                Err(e) => {
                    // One thread is enough to write everything (one put at a time).
                    if io_threads.is_empty() {
                        shared.fail(WriterError::IoThread(e));
                    }
                    break;
                }
            }
        }
        IoPool {
            senders,
            threads: io_threads,
            seq: 0,
            large_jobs: 0,
            spare: spare_rx,
        }
    }

    /// An events buffer an I/O thread is done with, if one came back.
    pub fn spare_buffer(&self) -> Option<Vec<u8>> {
        self.spare.try_recv().ok()
    }

    /// Hands the puts of one job of the writer to the I/O threads as one message.
    pub fn send(&mut self, puts: Vec<Put>) -> Result<(), WriterError> {
        self.send_job(IoJob::Puts(puts))
    }

    /// Sends `job` to the I/O threads with its number.
    fn send_job(&mut self, job: IoJob) -> Result<(), WriterError> {
        if self.senders.is_empty() {
            return Err(WriterError::IoThreadStopped);
        }
        // Only a job of many bytes goes to the next I/O thread in turn; the others go to the
        // first. A second thread pays off where the kernel's copy of megabytes into the page
        // cache is the work; for a step of a few small files it would only add a wake-up and
        // a wait for its turn, on the cores the training step runs on.
        let thread = match &job {
            IoJob::Puts(puts)
                if puts.iter().map(|p| p.data.len()).sum::<usize>() >= SPLIT_JOB_BYTES =>
            {
                self.large_jobs += 1;
                (self.large_jobs % self.senders.len() as u64) as usize
            }
            _ => 0,
        };
        self.senders[thread]
            .send((self.seq, job))
            .map_err(|_| WriterError::IoThreadStopped)?;
        self.seq += 1;
        Ok(())
    }

    /// Waits until every put handed to the I/O threads is done.
    pub fn wait(&mut self) {
        let (tx, rx) = sync_channel(1);
        if self.send_job(IoJob::Flush(tx)).is_ok() {
            let _ = rx.recv();
        }
    }

    /// Closes the channels and waits for the I/O threads to finish what they were given; a
    /// thread that panicked is recorded in `shared`.
    pub fn stop(self, shared: &Shared) {
        drop(self.senders);
        for t in self.threads {
            if t.join().is_err() {
                shared.fail(WriterError::IoThreadStopped);
            }
        }
    }
}

/// One I/O thread: storage calls (fsync on disk, a round trip on object stores) overlap
/// the encoding of the next step. It stages each job's puts, then publishes them in the
/// job's turn ([`Turns`]; see the module documentation). After a failure nothing more is
/// published; staged files are removed.
///
/// An events buffer that nobody else holds after its put goes back to the writer through
/// `spare` to hold a later step: a step's buffer is megabytes, and freeing and allocating one
/// per step makes the allocator hand pages back to the kernel and fault them in again (with
/// TLB shootdowns that interrupt the training thread too).
fn run_io(
    shared: Arc<Shared>,
    jobs: Receiver<(u64, IoJob)>,
    turns: Arc<Turns>,
    spare: SyncSender<Vec<u8>>,
    priority: WriterPriority,
) {
    priority.apply_to_current_thread();
    for (seq, job) in jobs {
        let ticket = Ticket {
            turns: &turns,
            seq,
            used: false,
        };
        match job {
            IoJob::Flush(reply) => {
                let _turn = ticket.wait();
                let _ = reply.send(());
            }
            IoJob::Puts(puts) => {
                // Nothing is written after a put that failed (not even its folder).
                let mut failed = shared.failed();
                let staged: Vec<_> = puts
                    .into_iter()
                    .map(|put| {
                        let keep = (put.event_bytes > 0).then(|| put.data.clone());
                        let staged = (!failed).then(|| put.store.stage(&put.key, put.data));
                        failed |= matches!(staged, Some(Err(_)));
                        (put.store, put.key, put.event_bytes, keep, staged)
                    })
                    .collect();
                let _turn = ticket.wait();
                for (store, key, event_bytes, keep, staged) in staged {
                    if shared.failed() {
                        // The rest is dropped unpublished (its temporary files removed).
                        break;
                    }
                    match staged.map(|s| s.and_then(|s| store.publish(s))) {
                        Some(Ok(())) => {
                            shared.event_bytes.fetch_add(event_bytes, Ordering::Relaxed);
                        }
                        Some(Err(source)) => shared.fail(WriterError::Store { key, source }),
                        None => break,
                    }
                    if let Some(Ok(buffer)) = keep.map(Bytes::try_into_mut) {
                        // Full (the writer has spares enough) or gone: the buffer is freed.
                        let _ = spare.try_send(Vec::from(buffer));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_pass_in_order_and_past_a_job_whose_thread_panicked() {
        let turns = Arc::new(Turns::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        // Started in reverse: each job publishes only in its turn.
        let mut threads = Vec::new();
        for seq in (0..4u64).rev() {
            let (turns, order) = (turns.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let ticket = Ticket {
                    turns: &turns,
                    seq,
                    used: false,
                };
                if seq == 1 {
                    panic!("job 1 fails while writing its files");
                }
                let _turn = ticket.wait();
                order.lock().unwrap().push(seq);
            }));
        }
        let panicked = threads
            .into_iter()
            .map(|t| t.join().is_err())
            .filter(|&p| p)
            .count();
        assert_eq!(panicked, 1);
        assert_eq!(*order.lock().unwrap(), [0, 2, 3]);
        assert_eq!(*turns.next.lock().unwrap(), 4);
    }
}
